"""`rem sparsity-curve`, `rem.analysis.sparsity_curve` and a package's curve (`rem.tracking.package_analyses`) on a
model trained on real Fashion-MNIST: the unpruned row is the trial's own final evaluation, each row holds the sparsity
it asked for, and bad input is one line."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from rem.analysis.at_trial_end import AT_TRIAL_END
from rem.cli import main as rem_cli
from rem.tracking.model_sources import load_source
from rem.tracking.model_store import MODEL_ARTIFACT, model_package, save_package
from rem.tracking.package_analyses import curve_for_package
from rem.training.checkpoint import CHECKPOINT_FILE, trial_checkpoint_dir
from rem.training.loop import train
from tests.analysis.model_runs import run_holding_the_model
from tests.tiny_trials import tiny_cfg

SPARSITIES = (0.0, 0.5, 0.9)


@pytest.fixture(scope="module")
def trained(fashion_raw, tmp_path_factory):
    """A +Q CapsNet (small) trained two epochs on real Fashion-MNIST, its curve recorded by the trial itself."""
    work = tmp_path_factory.mktemp("curve-trial")
    cfg = tiny_cfg(fashion_raw, epochs=2).with_overrides(
        {"data.dataset": "fashion-mnist", "eval.sparsity_curve": True, "eval.curve_sparsities": list(SPARSITIES)})
    metrics = train(cfg, workdir=work, measurements=AT_TRIAL_END)
    return metrics, trial_checkpoint_dir(work)


@pytest.mark.realdata
def test_unpruned_row_is_the_final_evaluation(trained):
    metrics, checkpoint = trained
    package, source, run_id = load_source(str(checkpoint))
    assert run_id is None and package["epoch"] == metrics["final/checkpoint_epoch"]
    frame = curve_for_package(package, source, checkpoint, sparsities=SPARSITIES)
    for scope, row in frame[frame["target"] == 0].set_index("scope").iterrows():
        assert row["test/acc"] == metrics["final/test/acc"], scope
        assert row["entropy/mean"] == pytest.approx(metrics["final/entropy/mean"], abs=1e-12)
        assert row["parse_trees/total"] == metrics["final/parse_trees/total"]
    # the trial recorded the same curve with its final evaluation
    for row in frame.to_dict("records"):
        assert metrics[f"curve/{row['scope']}/{row['target']:g}/test/acc"] == row["test/acc"]


@pytest.mark.realdata
def test_each_row_holds_the_sparsity_it_asked_for(trained):
    _, checkpoint = trained
    package, source, _ = load_source(str(checkpoint))
    frame = curve_for_package(package, source, checkpoint, test_images=64, sparsities=SPARSITIES)
    assert set(frame["scope"]) == {"global", "class_capsules", "primary_conv"}
    assert (frame["n_images"] == 64).all()
    for row in frame.to_dict("records"):
        assert row["scope_sparsity"] == pytest.approx(row["target"], abs=1e-3)
        if row["scope"] == "class_capsules":
            assert row["sparsity/votes.weight"] == pytest.approx(row["target"], abs=1e-3)
            assert row["sparsity/primary.conv.weight"] == 0
        if row["scope"] == "global":
            assert row["sparsity"] == pytest.approx(row["target"], abs=1e-3)
    dense = frame[frame["target"] == 0]["test/acc"].iloc[0]
    assert frame[(frame["scope"] == "global") & (frame["target"] == 90)]["test/acc"].iloc[0] < dense


@pytest.mark.realdata
def test_command_writes_the_table_and_figure_and_logs_to_the_run(trained, tmp_path, capsys):
    from mlflow.tracking import MlflowClient

    uri, run_id = run_holding_the_model(trained[1], tmp_path, "curve")
    out = tmp_path / "out"
    code = rem_cli(["sparsity-curve", run_id, "--images", "32", "--sparsities", "0", "0.8",
                    "--out", str(out), "--tracking-uri", uri])
    assert code == 0, capsys.readouterr().err
    table = pd.read_parquet(out / "sparsity_curve.parquet")
    assert len(table) == 6 and pd.read_csv(out / "sparsity_curve.csv").shape[0] == 6
    assert (out / "sparsity_curve.png").stat().st_size > 10_000
    logged = MlflowClient(uri).get_run(run_id)
    assert "curve/global/80/test/acc" in logged.data.metrics
    assert {a.path for a in MlflowClient(uri).list_artifacts(run_id, "sparsity_curve")} >= {
        "sparsity_curve/sparsity_curve.parquet", "sparsity_curve/sparsity_curve.png"}


def one_line_error(capsys, argv) -> str:
    assert rem_cli(["sparsity-curve", *argv]) == 2
    lines = capsys.readouterr().err.strip().splitlines()  # MLflow may log its store's creation first
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0]
    return errors[0]


def test_a_run_without_a_model_artifact_is_one_line(tmp_path, capsys):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    run = client.create_run(client.create_experiment("empty", artifact_location=str(tmp_path / "artifacts")))
    err = one_line_error(capsys, [run.info.run_id, "--tracking-uri", uri])
    assert run.info.run_id in err and MODEL_ARTIFACT in err


@pytest.mark.realdata
def test_a_checkpoint_of_another_shape_is_one_line(trained, tmp_path, capsys):
    _, checkpoint = trained
    package = model_package(torch.load(checkpoint / CHECKPOINT_FILE, weights_only=True))
    package["build_args"]["primary_types"] = 4  # the weights hold 8 primary types
    err = one_line_error(capsys, [str(save_package(package, tmp_path / "other.pt"))])
    assert "do not fit capsnet" in err and "primary.conv.weight" in err


@pytest.mark.realdata
@pytest.mark.parametrize("bad", ["1.0", "-0.1", "nan"])
def test_a_sparsity_outside_0_1_is_one_line(trained, capsys, bad):
    err = one_line_error(capsys, [str(trained[1]), "--sparsities", "0.5", bad])
    assert "[0, 1)" in err and (bad in err or (bad == "nan" and "nan" in err))


def test_config_rejects_a_curve_sparsity_out_of_range(tmp_path):
    from rem.config import ConfigError

    with pytest.raises(ConfigError, match=r"eval.curve_sparsities must be fractions in \[0, 1\); got \[1.5\]"):
        tiny_cfg(tmp_path).with_overrides({"eval.curve_sparsities": [0.5, 1.5]})
