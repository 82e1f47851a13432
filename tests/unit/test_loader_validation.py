"""A bad dataset stops `heirloom load` with file, line and field, exit code 2, before any write."""

import copy
import os

import pytest

from heirloom_dev.cli import main
from heirloom_dev.loader import DatasetError, read_dataset
from tests.support.dataset import MiniDataset


def test_the_mini_dataset_reads_cleanly(tmp_path):
    ds = read_dataset(MiniDataset().write(tmp_path))
    assert len(ds.stories) == 4 and len(ds.links) == 1


def _broken(tmp_path, file, mutate):
    mini = MiniDataset()
    rows = copy.deepcopy(mini.files()[file])
    mutate(rows)
    return mini.write(tmp_path, {file: rows})


@pytest.mark.parametrize(
    "file,mutate,expected",
    [
        ("stories", lambda r: r[1].update(visibility="secret"), "stories.jsonl:2: visibility:"),
        ("members", lambda r: r[0].update(role="owner"), "members.jsonl:1: role:"),
        ("persons", lambda r: r[0].update(id="not-a-uuid"), "persons.jsonl:1: id:"),
        (
            "stories",
            lambda r: r[0].update(legacy_id="00000000-0000-4000-8000-000000000000"),
            "stories.jsonl:1: legacy_id: unknown legacy",
        ),
        (
            "members",
            lambda r: r[2].update(user_id="00000000-0000-4000-8000-000000000001"),
            "members.jsonl:3: user_id: unknown user",
        ),
        ("stories", lambda r: r[0].update(created_at="2024-05-01T10:00:00"), "stories.jsonl:1: created_at:"),
        ("stories", lambda r: r[0].update(extra_field=1), "stories.jsonl:1: extra_field:"),
    ],
)
def test_bad_records_name_file_line_and_field(tmp_path, file, mutate, expected):
    root = _broken(tmp_path, file, mutate)
    with pytest.raises(DatasetError) as err:
        read_dataset(root)
    assert str(err.value).startswith(expected)


@pytest.mark.parametrize(
    "file,mutate,expected",
    [
        ("members", lambda r: r.pop(2), "stories.jsonl:4: author_user_id: user "),
        (
            "stories",
            lambda r: r[2].update(visibility="private"),
            "stories.jsonl:3: visibility: the author is",
        ),
    ],
)
def test_an_author_s3_imports_would_refuse_is_a_warning_in_a_dataset(tmp_path, file, mutate, expected):
    """Decision 0028: a dataset is the operator's (check_dataset.py warns too); it reads whole."""
    dataset = read_dataset(_broken(tmp_path, file, mutate))
    assert len(dataset.stories) == len(MiniDataset().files()["stories"])
    assert [w for w in dataset.warnings if w.startswith(expected)] and len(dataset.warnings) == 1


def test_malformed_json_line(tmp_path):
    root = MiniDataset().write(tmp_path)
    with (root / "users.jsonl").open("a") as fh:
        fh.write("{not json\n")
    with pytest.raises(DatasetError, match=r"users.jsonl:3: not valid JSON"):
        read_dataset(root)


def test_cli_exits_2_with_the_reason_and_starts_nothing(tmp_path, capsys, monkeypatch):
    root = _broken(tmp_path, "stories", lambda r: r[0].update(visibility="secret"))

    def must_not_start(*_a, **_k):
        raise AssertionError("the stack must not start for an invalid dataset")

    monkeypatch.setattr("heirloom_dev.runtime.open_runtime", must_not_start)
    # the CLI sets quiet Powertools defaults in the process environment: keep them in this test
    monkeypatch.setattr(os, "environ", dict(os.environ))
    assert main(["load", str(root)]) == 2
    assert "stories.jsonl:1: visibility:" in capsys.readouterr().err


@pytest.mark.parametrize(
    "line,expected",
    [
        (b'{"id": "caf\xe9"}\n', r"users.jsonl:3: not valid UTF-8 \(byte 0xe9 at column 12\)"),
        (b"\xff\xfe{}\n", r"users.jsonl:3: not valid UTF-8 \(byte 0xff at column 1\)"),
        (b'{"n": ' + b"9" * 5000 + b"}\n", r"users.jsonl:3: not valid JSON: ValueError"),
        (b"[" * 100_000 + b"\n", r"users.jsonl:3: not valid JSON"),
    ],
)
def test_undecodable_bytes_and_parser_limits_name_file_and_line(tmp_path, line, expected):
    """An invalid UTF-8 byte gave a raw UnicodeDecodeError traceback instead of file:line."""
    root = MiniDataset().write(tmp_path)
    with (root / "users.jsonl").open("ab") as fh:
        fh.write(line)
    with pytest.raises(DatasetError, match=expected):
        read_dataset(root)


@pytest.mark.parametrize(
    "line,expected",
    [
        (b'{"query": "caf\xe9"}\n', "queries.jsonl:2: not valid UTF-8 (byte 0xe9 at column 15)"),
        (b"{not json\n", "queries.jsonl:2: not valid JSON"),
        (b"[1, 2]\n", "queries.jsonl:2: expected a JSON object"),
    ],
)
def test_eval_names_file_and_line_of_a_bad_query_and_starts_nothing(
    tmp_path, capsys, monkeypatch, line, expected
):
    """heirloom eval read queries.jsonl with a bare json.loads: a raw traceback."""
    root = MiniDataset().write(tmp_path)
    (root / "queries.jsonl").write_bytes(b'{"query_id": "q1"}\n' + line)

    def must_not_start(*_a, **_k):
        raise AssertionError("the stack must not start for an invalid dataset")

    monkeypatch.setattr("heirloom_dev.stack.LocalStack.up", must_not_start)
    monkeypatch.setattr(os, "environ", dict(os.environ))
    assert main(["eval", str(root)]) == 2
    assert expected in capsys.readouterr().err
