"""The breaker's shared state in DynamoDB (moto): conditional writes decide the half-open trial."""

import boto3
import pytest
from moto import mock_aws

from heirloom.adapters.dynamodb import DynamoBreakerStore
from heirloom.domain.breaker import CircuitBreaker
from heirloom.ports import BreakerRecord


@pytest.fixture
def table():
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName="breaker",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield client


def test_round_trip_and_version_conflicts(table):
    store = DynamoBreakerStore("breaker", client=table)
    assert store.load("graph") == BreakerRecord()
    assert store.save("graph", BreakerRecord(state="open", failures=3, opened_at=12.5, version=1), 0)
    assert not store.save("graph", BreakerRecord(state="closed", version=1), 0)
    assert store.load("graph") == BreakerRecord(state="open", failures=3, opened_at=12.5, version=1)
    item = table.get_item(TableName="breaker", Key={"pk": {"S": "breaker#graph"}})["Item"]
    assert int(item["expires_at"]["N"]) > 0


def test_two_containers_share_one_trial(table):
    now = [100.0]
    a = CircuitBreaker(DynamoBreakerStore("breaker", client=table), clock=lambda: now[0], cache_ttl_s=0)
    b = CircuitBreaker(DynamoBreakerStore("breaker", client=table), clock=lambda: now[0], cache_ttl_s=0)
    for _ in range(3):
        a.record_failure()
    assert b.state() == "open"
    now[0] += 30
    assert [a.allow(), b.allow()] == [True, False]


def test_the_default_client_has_short_connect_and_read_timeouts(monkeypatch):
    """botocore's defaults (60 s each) let a hung DynamoDB hold every request's breaker read."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    config = DynamoBreakerStore("breaker")._client.meta.config
    assert (config.connect_timeout, config.read_timeout) == (1, 1)
    assert config.retries == {"mode": "standard", "total_max_attempts": 2}
