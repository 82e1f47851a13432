"""Custom resource: apply the packaged migrations (heirloom/migrations/*.sql, which start with
`CREATE EXTENSION IF NOT EXISTS vector`) to Aurora on every deploy that changes them.

Runs in the VPC with the shared and deps layers; connects to the writer endpoint (not the proxy:
DDL and the advisory lock belong on one direct session) with the cluster's secret.
"""

from __future__ import annotations

import json
import os
from typing import Any

PHYSICAL_ID = "heirloom-schema"


def database_url(secret: dict[str, Any], env: dict[str, str]) -> str:
    from psycopg.conninfo import make_conninfo

    return make_conninfo(
        host=env["DB_HOST"],
        port=env.get("DB_PORT", "5432"),
        dbname=env["DB_NAME"],
        user=secret["username"],
        password=secret["password"],
        sslmode="require",
        connect_timeout="10",
    )


def handler(
    event: dict[str, Any], context: object, *, secrets: Any = None, database: Any = None
) -> dict[str, Any]:
    if event["RequestType"] == "Delete":
        # the schema outlives the resource: the cluster is kept (snapshot) on delete
        return {"PhysicalResourceId": event.get("PhysicalResourceId", PHYSICAL_ID)}
    env = dict(os.environ)
    if secrets is None:
        import boto3

        secrets = boto3.client("secretsmanager")
    secret = json.loads(secrets.get_secret_value(SecretId=env["DB_SECRET_ARN"])["SecretString"])
    if database is None:
        from heirloom.adapters.postgres import PgDatabase

        database = PgDatabase
    db = database(
        database_url(secret, env), statement_timeout_ms=600_000, embedding_dim=int(env["EMBEDDING_DIM"])
    )
    try:
        applied = db.migrate()
    finally:
        db.close()
    print(json.dumps({"migrations_applied": applied}))
    return {"PhysicalResourceId": PHYSICAL_ID, "Data": {"Applied": ",".join(applied) or "none"}}
