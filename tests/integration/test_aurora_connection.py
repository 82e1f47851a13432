"""Aurora-style connections against the embedded PostgreSQL: the database secret in Secrets Manager
(moto) resolved through settings and the factory, IAM auth tokens, connection reuse and
reconnects, and no session state for RDS Proxy to pin on.

The embedded server listens on a unix socket with trust auth, so a secret whose host is the
socket folder works and any password (or IAM token) is accepted; sslmode=require is ignored
on unix sockets."""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qs
from uuid import uuid4

import boto3
import psycopg
import pytest
from aws_lambda_powertools.utilities.parameters import base as parameters_base
from moto import mock_aws
from psycopg.conninfo import conninfo_to_dict

from heirloom.adapters import factory
from heirloom.adapters.aurora import IamSource, SecretSource
from heirloom.adapters.postgres import PgDatabase, PgStoryStore
from heirloom.contracts.records import Legacy, Person
from heirloom.errors import StoreUnavailable
from heirloom.settings import SettingsError, settings_from_env

FAKE_KEY, FAKE_SECRET = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.fixture
def aws(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", FAKE_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", FAKE_SECRET)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        yield boto3.client("secretsmanager", region_name="us-east-1")
    parameters_base.DEFAULT_PROVIDERS.clear()  # its client belonged to this mock


def socket_and_db(database_url: str) -> tuple[str, str]:
    parts = conninfo_to_dict(database_url)
    return str(parts["host"]), str(parts["dbname"])


def rds_secret(sm, database_url: str, **overrides) -> str:
    host, dbname = socket_and_db(database_url)
    value = {
        "engine": "postgres",
        "host": host,
        "port": 5432,
        "username": "postgres",
        "password": "rotated-by-secrets-manager",
        "dbname": dbname,
        "dbClusterIdentifier": "heirloom-cluster",
        **overrides,
    }
    return sm.create_secret(Name=f"heirloom/db/{uuid4().hex[:8]}", SecretString=json.dumps(value))["ARN"]


def env(**extra: str) -> dict[str, str]:
    return {"EMBEDDING_PROVIDER": "fake", "EMBEDDING_DIM": "64", **extra}


def test_secret_settings_resolve_to_a_working_pooled_connection(aws, database_url):
    arn = rds_secret(aws, database_url)
    db = factory.build_database(settings_from_env(env(DB_SECRET_ARN=arn, DB_STATEMENT_TIMEOUT_MS="1234")))
    try:
        assert isinstance(db.source, SecretSource) and db.pooled
        assert "rotated-by-secrets-manager" not in db.url
        db.migrate()
        stories = PgStoryStore(db)
        legacy, person = uuid4(), uuid4()
        stories.upsert_legacy(Legacy(id=legacy, name="Edith", subject_person_id=person))
        stories.upsert_person(Person(id=person, legacy_id=legacy, name="Edith Marlowe"))
        assert stories.get_legacy(legacy).name == "Edith"

        conn = db.connection()
        assert conn is db.connection()  # reused across invocations
        assert conn.prepare_threshold is None  # no named prepared statements for the proxy to pin on
        # no session-level SET: the server default outside a transaction ...
        assert conn.execute("SHOW statement_timeout").fetchone()["statement_timeout"] == "0"
        # ... and the configured timeout inside each one
        with db.transaction() as tx:
            assert tx.execute("SHOW statement_timeout").fetchone()["statement_timeout"] == "1234ms"
        assert conn.execute("SHOW statement_timeout").fetchone()["statement_timeout"] == "0"
    finally:
        db.close()


def test_the_secret_is_cached_and_db_host_overrides_it(aws, database_url):
    host, dbname = socket_and_db(database_url)
    arn = rds_secret(
        aws, database_url, host="heirloom.cluster-abc.us-east-1.rds.amazonaws.com", dbname="other"
    )
    db = factory.build_database(settings_from_env(env(DB_SECRET_ARN=arn, DB_HOST=host, DB_NAME=dbname)))
    calls = []
    try:
        info = db.connection().info
        assert info.dbname == dbname and info.user == "postgres"
        client = parameters_base.DEFAULT_PROVIDERS["secrets"].client
        client.meta.events.register("before-call.secrets-manager.GetSecretValue", lambda **_: calls.append(1))
        db.close()
        db.connection()  # a new connection within DB_SECRET_MAX_AGE_S: the cached secret
        assert calls == []
        db.source.secret(refresh=True)
        assert calls == [1]
    finally:
        db.close()


def test_a_secret_without_credentials_is_a_settings_error(aws):
    arn = aws.create_secret(
        Name="heirloom/db/broken", SecretString=json.dumps({"host": "h", "username": "u"})
    )["ARN"]
    db = factory.build_database(settings_from_env(env(DB_SECRET_ARN=arn)))
    with pytest.raises(SettingsError, match="lacks a valid password"):
        db.connection()


def test_a_missing_secret_is_store_unavailable(aws):
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:heirloom/db/missing-AbCdEf"
    db = factory.build_database(settings_from_env(env(DB_SECRET_ARN=arn)))
    with pytest.raises(StoreUnavailable, match="ResourceNotFoundException"):
        db.connection()


def test_a_rotated_password_is_fetched_again_once(aws, database_url, monkeypatch):
    arn = rds_secret(aws, database_url)
    db = factory.build_database(settings_from_env(env(DB_SECRET_ARN=arn)))
    old = json.loads(aws.get_secret_value(SecretId=arn)["SecretString"])
    db.source.secret()  # cached by an earlier invocation
    aws.put_secret_value(SecretId=arn, SecretString=json.dumps({**old, "password": "new-password"}))
    real_connect = psycopg.connect
    seen = []

    def connect(conninfo, **kwargs):
        password = conninfo_to_dict(conninfo).get("password")
        seen.append(password)
        if password is not None and password != "new-password":  # what the server now expects
            raise psycopg.errors.InvalidPassword("password authentication failed for user postgres")
        return real_connect(conninfo, **kwargs)

    monkeypatch.setattr(psycopg, "connect", connect)
    try:
        db.connection()
    finally:
        db.close()
    assert seen == ["rotated-by-secrets-manager", "new-password"]


PROXY = "heirloom-proxy.proxy-c1a2b3c4d5e6.eu-west-1.rds.amazonaws.com"


def fake_rds():
    return boto3.client(
        "rds", region_name="eu-west-1", aws_access_key_id=FAKE_KEY, aws_secret_access_key=FAKE_SECRET
    )


def test_iam_token_shape():
    settings = settings_from_env(env(DB_IAM_AUTH="true", DB_HOST=PROXY, DB_NAME="heirloom", DB_USER="app"))
    source = IamSource(settings.database, rds_client=fake_rds())
    token = source.token()
    endpoint, _, query = token.partition("/?")
    assert endpoint == f"{PROXY}:5432"
    params = {k: v[0] for k, v in parse_qs(query).items()}
    assert params["Action"] == "connect" and params["DBUser"] == "app"
    assert params["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256"
    assert re.fullmatch(rf"{FAKE_KEY}/\d{{8}}/eu-west-1/rds-db/aws4_request", params["X-Amz-Credential"])
    assert params["X-Amz-Expires"] == "900" and params["X-Amz-SignedHeaders"] == "host"
    assert re.fullmatch(r"[0-9a-f]{64}", params["X-Amz-Signature"])
    conninfo = conninfo_to_dict(source.conninfo())
    assert (conninfo["host"], conninfo["port"], conninfo["dbname"], conninfo["user"]) == (
        PROXY,
        "5432",
        "heirloom",
        "app",
    )
    assert conninfo["sslmode"] == "require"
    assert conninfo["password"].startswith(f"{PROXY}:5432/?Action=connect")
    assert source.token() != "" and "X-Amz-Security-Token" not in token  # long-term fake keys


class RecordingRds:
    """The real signer for a placeholder endpoint (a socket path is no hostname), recording
    what the adapter asked for."""

    def __init__(self):
        self.real, self.calls = fake_rds(), []
        self.meta = self.real.meta

    def generate_db_auth_token(self, **params):
        self.calls.append(params)
        return self.real.generate_db_auth_token(**{**params, "DBHostname": PROXY})


def test_iam_auth_connects_with_a_fresh_token_per_connection(local_stack, database_url):
    host, dbname = socket_and_db(database_url)
    rds = RecordingRds()
    settings = settings_from_env(env(DB_IAM_AUTH="true", DB_HOST=host, DB_NAME=dbname, DB_USER="postgres"))
    db = factory.build_database(settings, rds_client=rds)
    try:
        assert db.connection().execute("SELECT current_database() AS d").fetchone()["d"] == dbname
        db.close()
        db.connection()
    finally:
        db.close()
    assert (
        rds.calls == [{"DBHostname": host, "Port": 5432, "DBUsername": "postgres", "Region": "eu-west-1"}] * 2
    )


def test_a_broken_or_dropped_connection_is_reopened(database_url):
    db = PgDatabase(database_url, embedding_dim=64, idle_check_s=0.0)
    admin = psycopg.connect(database_url, autocommit=True)
    try:
        first = db.connection()
        pid = first.info.backend_pid
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        # idle past the check: SELECT 1 fails, a new connection is opened
        second = db.connection()
        assert second is not first and second.info.backend_pid != pid
        assert second.execute("SHOW statement_timeout").fetchone()["statement_timeout"] == "5s"
        # a connection that broke mid-invocation is replaced on the next call
        db._idle_check_s = 3600.0
        admin.execute("SELECT pg_terminate_backend(%s)", (second.info.backend_pid,))
        with pytest.raises(psycopg.OperationalError):
            second.execute("SELECT 1")
        assert second.broken
        third = db.connection()
        assert third is not second and third.execute("SELECT 1 AS one").fetchone()["one"] == 1
    finally:
        admin.close()
        db.close()


def test_pgvector_is_registered_once_per_connection(database_url, monkeypatch):
    import pgvector.psycopg

    db = PgDatabase(database_url, embedding_dim=64)
    db.migrate()
    db.close()
    calls = []
    real = pgvector.psycopg.register_vector
    monkeypatch.setattr(pgvector.psycopg, "register_vector", lambda conn: calls.append(conn) or real(conn))
    try:
        for _ in range(3):
            db.connection().execute("SELECT '[1,2,3]'::vector AS v").fetchone()
        assert len(calls) == 1
    finally:
        db.close()
