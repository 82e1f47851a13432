"""Test-wide environment: region, fake credentials and Powertools settings, set before any
handler module is imported."""

import os
from pathlib import Path

os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("AWS_REGION", "us-east-1")
os.environ["AWS_ACCESS_KEY_ID"] = "testing"
os.environ["AWS_SECRET_ACCESS_KEY"] = "testing"  # noqa: S105 - moto's fake credentials
os.environ["AWS_SECURITY_TOKEN"] = "testing"  # noqa: S105
os.environ["AWS_SESSION_TOKEN"] = "testing"  # noqa: S105
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "heirloom")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "Heirloom")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(Path(__file__).parent / ".heirloom" / "tiktoken"))
