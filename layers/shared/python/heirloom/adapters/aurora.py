"""Where PgDatabase's connection parameters come from: a libpq URI (local, tests), the Aurora
secret in Secrets Manager (RDS's JSON shape, fetched through Powertools parameters and cached),
or an IAM auth token (`rds.generate_db_auth_token`, signed locally, valid 15 minutes).

Each source returns a fresh conninfo when PgDatabase opens a connection; `refresh=True` asks for
new credentials (a rotated secret). `description` is safe to log: it never holds a password.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from psycopg.conninfo import conninfo_to_dict, make_conninfo
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from heirloom.errors import StoreUnavailable
from heirloom.settings import DatabaseSettings, SettingsError

log = logging.getLogger(__name__)

DEFAULT_PORT = 5432


class ConnectionSource(Protocol):
    description: str
    #: the server may sit behind RDS Proxy: keep no session state that would pin the connection
    pooled: bool

    def conninfo(self, *, refresh: bool = False) -> str: ...


class UrlSource:
    pooled = False

    def __init__(self, url: str):
        self.url = url
        parts = conninfo_to_dict(url)
        parts.pop("password", None)
        self.description = make_conninfo("", **{k: str(v) for k, v in parts.items() if v is not None})

    def conninfo(self, *, refresh: bool = False) -> str:
        return self.url


class RdsSecret(BaseModel):
    """The JSON of an RDS / Aurora database secret (other keys, e.g. engine, are ignored)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    username: str = Field(min_length=1)
    password: str = Field(min_length=1)
    host: str = ""
    port: int | None = Field(default=None, ge=1, le=65535)
    dbname: str = ""


def _ssl(settings: DatabaseSettings) -> dict[str, str]:
    ssl: dict[str, str] = {"sslmode": settings.sslmode}
    if settings.sslrootcert:
        ssl["sslrootcert"] = settings.sslrootcert
    return ssl


class SecretSource:
    """Credentials from the database secret; DB_HOST / DB_PORT / DB_NAME override the secret's
    host, port and dbname (the RDS Proxy endpoint instead of the cluster's)."""

    pooled = True

    def __init__(self, settings: DatabaseSettings, *, provider: Any = None):
        self.secret_arn = settings.secret_arn
        self._settings = settings
        #: a Powertools SecretsProvider; None uses `parameters.get_secret` (its default provider)
        self._provider = provider
        self.description = f"secret {self.secret_arn}"

    def secret(self, *, refresh: bool = False) -> RdsSecret:
        from aws_lambda_powertools.utilities import parameters
        from aws_lambda_powertools.utilities.parameters.exceptions import (
            GetParameterError,
            TransformParameterError,
        )

        max_age = self._settings.secret_max_age_s
        try:
            if self._provider is not None:
                raw = self._provider.get(
                    self.secret_arn, transform="json", max_age=max_age, force_fetch=refresh
                )
            else:
                raw = parameters.get_secret(
                    self.secret_arn, transform="json", max_age=max_age, force_fetch=refresh
                )
        except TransformParameterError as exc:
            raise SettingsError(f"database secret {self.secret_arn} is not JSON") from exc
        except GetParameterError as exc:
            raise StoreUnavailable(f"database secret {self.secret_arn} unavailable: {_reason(exc)}") from exc
        try:
            return RdsSecret.model_validate(raw)
        except ValidationError as exc:
            fields = sorted({str(e["loc"][0]) for e in exc.errors() if e["loc"]})
            raise SettingsError(
                f"database secret {self.secret_arn} lacks a valid {', '.join(fields) or 'JSON object'}"
            ) from None

    def conninfo(self, *, refresh: bool = False) -> str:
        secret = self.secret(refresh=refresh)
        s = self._settings
        host = s.host or secret.host
        dbname = s.name or secret.dbname
        if not host or not dbname:
            raise SettingsError(
                f"database secret {self.secret_arn} has no {'host' if not host else 'dbname'}: set "
                f"{'DB_HOST' if not host else 'DB_NAME'}"
            )
        return make_conninfo(
            host=host,
            port=str(s.port or secret.port or DEFAULT_PORT),
            dbname=dbname,
            user=secret.username,
            password=secret.password,
            connect_timeout=str(s.connect_timeout_s),
            **_ssl(s),
        )


def _reason(exc: Exception) -> str:
    """The AWS error code behind a Powertools GetParameterError, when there is one."""
    cause = exc.__cause__ or exc.__context__
    response = getattr(cause, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", type(cause).__name__))
    return type(cause).__name__ if cause is not None else "error"


class IamSource:
    """A new IAM auth token for every connection (tokens last 15 minutes; signing is local)."""

    pooled = True

    def __init__(self, settings: DatabaseSettings, *, rds_client: Any = None, region: str = ""):
        self._settings = settings
        self._client = rds_client
        self._region = region
        self.port = settings.port or DEFAULT_PORT
        self.description = f"iam {settings.user}@{settings.host}:{self.port}/{settings.name}"

    def _rds(self) -> Any:
        if self._client is None:
            import boto3

            self._client = boto3.client("rds", region_name=self._region or None)
        return self._client

    def token(self) -> str:
        client = self._rds()
        s = self._settings
        token: str = client.generate_db_auth_token(
            DBHostname=s.host, Port=self.port, DBUsername=s.user, Region=client.meta.region_name
        )
        return token

    def conninfo(self, *, refresh: bool = False) -> str:
        s = self._settings
        return make_conninfo(
            host=s.host,
            port=str(self.port),
            dbname=s.name,
            user=s.user,
            password=self.token(),
            connect_timeout=str(s.connect_timeout_s),
            **_ssl(s),
        )


def connection_source(settings: DatabaseSettings, **kwargs: Any) -> ConnectionSource:
    mode = settings.mode
    if mode == "url":
        return UrlSource(settings.url)
    if mode == "secret":
        return SecretSource(settings, provider=kwargs.get("provider"))
    if mode == "iam":
        return IamSource(settings, rds_client=kwargs.get("rds_client"))
    raise SettingsError("no database configured: set DATABASE_URL, DB_SECRET_ARN or DB_IAM_AUTH")
