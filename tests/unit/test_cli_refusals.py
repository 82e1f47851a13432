"""CLI commands refuse bad arguments with one line and exit 2, before any work and without a
stack."""

from heirloom_dev.cli import main


def test_intent_model_refuses_an_out_file_before_training(tmp_path, capsys):
    """`--out` named a file: a FileExistsError traceback after ten seconds of training."""
    taken = tmp_path / "weights.json"
    taken.write_text("{}")
    assert main(["intent-model", "--out", str(taken)]) == 2
    assert "is a file" in capsys.readouterr().err and taken.read_text() == "{}"


def test_eval_refuses_a_budget_out_of_range_before_any_stack(tmp_path, capsys):
    """The budget was checked per query, after the stack started and the dataset loaded."""
    from pathlib import Path

    sample = Path(__file__).parents[2] / "examples" / "sample-legacy"
    assert main(["eval", str(sample), "--budget", "0", "--json", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--budget 0: between 500 and 16000" in err and "a folder, not a file" in err
