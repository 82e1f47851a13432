"""DynamoDB adapters: the shared circuit-breaker state (conditional writes)."""

from __future__ import annotations

import time
from typing import Any

from heirloom.ports import BreakerRecord

#: breaker items expire a day after their last write (TTL attribute `expires_at`)
BREAKER_TTL_S = 86_400


#: the breaker is read on every request: a slow DynamoDB must fail fast ("unknown" state), not
#: hold IntentAnalysis for botocore's default 60 s connect and read timeouts
CLIENT_TIMEOUTS = {
    "connect_timeout": 1,
    "read_timeout": 1,
    "retries": {"total_max_attempts": 2, "mode": "standard"},
}


class DynamoBreakerStore:
    def __init__(self, table_name: str, client: Any | None = None):
        import boto3
        from botocore.config import Config

        self.table_name = table_name
        self._client = client or boto3.client("dynamodb", config=Config(**CLIENT_TIMEOUTS))

    def load(self, name: str) -> BreakerRecord:
        item = self._client.get_item(
            TableName=self.table_name, Key={"pk": {"S": f"breaker#{name}"}}, ConsistentRead=True
        ).get("Item")
        if not item:
            return BreakerRecord()
        return BreakerRecord(
            state=item["state"]["S"],
            failures=int(item["failures"]["N"]),
            opened_at=float(item["opened_at"]["N"]),
            version=int(item["version"]["N"]),
        )

    def save(self, name: str, record: BreakerRecord, expected_version: int) -> bool:
        from botocore.exceptions import ClientError

        condition = "attribute_not_exists(pk)" if expected_version == 0 else "version = :v"
        kwargs: dict[str, Any] = {
            "TableName": self.table_name,
            "Item": {
                "pk": {"S": f"breaker#{name}"},
                "state": {"S": record.state},
                "failures": {"N": str(record.failures)},
                "opened_at": {"N": repr(record.opened_at)},
                "version": {"N": str(record.version)},
                "expires_at": {"N": str(int(time.time()) + BREAKER_TTL_S)},
            },
            "ConditionExpression": condition,
        }
        if expected_version:
            kwargs["ExpressionAttributeValues"] = {":v": {"N": str(expected_version)}}
        try:
            self._client.put_item(**kwargs)
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True
