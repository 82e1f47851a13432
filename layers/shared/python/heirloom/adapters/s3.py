"""S3 object store for imports."""

from __future__ import annotations

from typing import Any

from heirloom.errors import NotFound


class S3ObjectStore:
    def __init__(self, client: Any | None = None):
        import boto3

        self._client = client or boto3.client("s3")

    def size(self, bucket: str, key: str) -> int:
        from botocore.exceptions import ClientError

        try:
            return int(self._client.head_object(Bucket=bucket, Key=key)["ContentLength"])
        except ClientError as exc:
            # deleted (or never written) before its notification was handled: nothing to import
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                raise NotFound(f"s3://{bucket}/{key} does not exist") from exc
            raise

    def read(self, bucket: str, key: str) -> bytes:
        body: bytes = self._client.get_object(Bucket=bucket, Key=key)["Body"].read()
        return body

    def tag(self, bucket: str, key: str, tags: dict[str, str]) -> None:
        self._client.put_object_tagging(
            Bucket=bucket, Key=key, Tagging={"TagSet": [{"Key": k, "Value": v} for k, v in tags.items()]}
        )
