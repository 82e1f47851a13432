"""CLI commands refuse bad arguments with one line and exit 2, before any work and without a
stack."""

from heirloom_dev.cli import main


def test_intent_model_refuses_an_out_file_before_training(tmp_path, capsys):
    """`--out` named a file: a FileExistsError traceback after ten seconds of training."""
    taken = tmp_path / "weights.json"
    taken.write_text("{}")
    assert main(["intent-model", "--out", str(taken)]) == 2
    assert "is a file" in capsys.readouterr().err and taken.read_text() == "{}"
