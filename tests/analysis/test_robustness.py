"""`rem.analysis.robustness`: the transformation families on small generated images (exact identities, rotations and
shifts against torch's own, seeded affNIST maps, every tensor on the images' device), the evaluation's frame and metric
keys on an untrained CapsNet and a model without couplings, bad input as one line, and on a model trained on real
Fashion-MNIST: the identity row is the trial's own test evaluation and accuracy falls with the rotation angle."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest
import torch

from rem.analysis.robustness import transforms
from rem.analysis.robustness.evaluation import robust_from_results, robust_metrics, robustness
from rem.analysis.robustness.families import IDENTITY, RobustnessError
from rem.analysis.robustness.transforms import transform_images
from rem.analysis.transformed import trial_transformed
from rem.cli import main as rem_cli
from rem.data import BatchTransform, get_dataset
from rem.data.splits import Split
from rem.models.from_config import build_model
from rem.models.registry import CapsuleOutput
from rem.report.analysis_files import write_robustness
from rem.tracking.model_sources import load_source, package_evaluation
from rem.tracking.package_analyses import robustness_for_package
from rem.training.checkpoint import trial_checkpoint_dir
from rem.training.run import evaluate_split
from tests.analysis.model_runs import run_holding_the_model
from tests.tiny_trials import tiny_cfg

ROUTING = ("entropy/mean", "entropy/std", "parse_trees/total", "routing/coupling_entropy")
SOME = {"rotation": [-90.0, 0.0, 90.0], "scale": [1.0, 1.2], "translation": [0.0, 2.0], "affnist": [1.0]}


def random_images(n=6, c=1, h=28, w=28, seed=0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (n, c, h, w), generator=gen, dtype=torch.uint8)


def digits(n=40) -> torch.Tensor:
    """Bright blobs on black, as digits are: content inside the canvas, zeros around it."""
    images = torch.zeros(n, 1, 28, 28, dtype=torch.uint8)
    images[:, :, 6:22, 9:19] = 200
    images[:, :, 10:14, 12:16] = 0
    return images


def centroid(image: torch.Tensor) -> list[float]:
    """(row, column) of an (H, W) image's mass."""
    weight = image.double() / image.double().sum()
    return [float((weight.sum(dim=1) * torch.arange(image.shape[0])).sum()),
            float((weight.sum(dim=0) * torch.arange(image.shape[1])).sum())]


@pytest.mark.parametrize("family", sorted(IDENTITY))
def test_the_identity_is_the_input_itself(family):
    images = random_images()
    out = transform_images(images, family, IDENTITY[family])
    assert out is images and torch.equal(out, random_images())


@pytest.mark.parametrize("degrees, quarter_turns", [(90.0, 1), (-90.0, -1), (180.0, 2)])
@pytest.mark.parametrize("size", [28, 29])
def test_a_quarter_turn_is_rot90_counter_clockwise(degrees, quarter_turns, size):
    images = random_images(h=size, w=size, c=3)
    out = transform_images(images, "rotation", degrees)
    expected = torch.rot90(images, quarter_turns, dims=(-2, -1))
    assert torch.equal(out[..., 1:-1, 1:-1], expected[..., 1:-1, 1:-1])  # pixel centres onto pixel centres
    assert (out.int() - expected.int()).abs().max() <= 1  # the border only by float rounding, if at all


@pytest.mark.parametrize("t", [2.0, -3.0])
def test_a_translation_is_a_roll_with_zeros_coming_in(t):
    images = random_images(h=28, w=30)
    out = transform_images(images, "translation", t)
    k = int(t)
    expected = torch.roll(images, shifts=(k, k), dims=(-2, -1))
    rows = slice(0, k) if k > 0 else slice(k, None)
    expected[..., rows, :] = 0
    expected[..., :, rows] = 0
    assert torch.equal(out, expected)


def test_shear_moves_rows_below_the_centre_right_and_scale_keeps_the_centre():
    dot = torch.zeros(1, 1, 29, 29, dtype=torch.uint8)
    dot[0, 0, 18, 14] = 255  # 4 rows below the centre (14, 14)
    assert (transform_images(dot, "shear", 0.25)[0, 0] > 0).nonzero().tolist() == [[18, 15]]
    zoomed, original = transform_images(digits(1), "scale", 1.25)[0, 0], digits(1)[0, 0]
    expected = [13.5 + 1.25 * (c - 13.5) for c in centroid(original)]  # (13.5, 13.5): the 28x28 centre
    assert centroid(zoomed) == pytest.approx(expected, abs=0.05)
    assert (zoomed > 0).sum() > (original > 0).sum()


def test_affnist_is_seeded_per_image_and_keeps_the_digit_on_the_canvas(monkeypatch):
    images = digits()
    first = transform_images(images, "affnist", 1.0, seed=7)
    assert first.dtype == torch.uint8 and first.shape == images.shape
    assert torch.equal(first, transform_images(images, "affnist", 1.0, seed=7))
    assert not torch.equal(first, transform_images(images, "affnist", 1.0, seed=8))
    assert len({bytes(image.numpy()) for image in first}) == len(images)  # a map per image
    monkeypatch.setattr(transforms, "CHUNK", 7)  # the draws do not depend on how the batch is cut
    assert torch.equal(first, transform_images(images, "affnist", 1.0, seed=7))
    linear, _ = transforms.affnist_linear(len(images), 1.0, 7, images.device)
    unshifted = transforms.warp(images.float(), linear, torch.zeros(len(images), 2)).round().clamp(0, 255)
    assert torch.equal(first.sum(dim=(1, 2, 3)), unshifted.sum(dim=(1, 2, 3)).to(torch.int64))  # nothing cut off


def test_affnist_draws_within_its_ranges():
    wide = torch.zeros(200, 1, 60, 60, dtype=torch.uint8)
    wide[:, :, 28:32, 28:32] = 255  # room to move the full +-6 px
    linear, uniforms = transforms.affnist_linear(200, 0.5, 0, wide.device)
    zoom_x = linear[:, :, 0].norm(dim=1)  # the rotation keeps the x axis' zoom as the first column's length
    assert zoom_x.min() >= 0.9 - 1e-6 and zoom_x.max() <= 1.1 + 1e-6
    shifts = transforms.affnist_shift(wide.float(), uniforms, 0.5)
    assert shifts.abs().max() == 3 and shifts.min() == -3  # +-6 * strength, whole pixels
    assert torch.equal(shifts, shifts.round())


@pytest.mark.parametrize("family, strength", [("rotation", 30.0), ("scale", 0.8), ("shear", -0.2),
                                              ("translation", 3.0), ("affnist", 1.5)])
def test_every_tensor_is_made_on_the_images_device(family, strength):
    images = random_images(c=3, h=20, w=24)
    expected = transform_images(images, family, strength, seed=3)
    with torch.device("meta"):  # a tensor made without device= would land on meta and fail against the images
        out = transform_images(images, family, strength, seed=3)
    assert out.device == images.device and out.dtype == torch.uint8 and torch.equal(out, expected)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
@pytest.mark.parametrize("family, strength", [("rotation", 30.0), ("affnist", 1.0)])
def test_a_gpu_batch_stays_on_the_gpu_and_matches_the_cpu(family, strength):
    images = random_images(n=300)
    out = transform_images(images.cuda(), family, strength, seed=5)
    assert out.device.type == "cuda" and out.dtype == torch.uint8
    assert (out.cpu().int() - transform_images(images, family, strength, seed=5).int()).abs().max() <= 1


@pytest.mark.parametrize("family, strength, words", [
    ("rotation", 200.0, ["rotation", "200", "[-180, 180]", "degrees"]),
    ("scale", 0.0, ["scale", "0", "(0, 4)"]),
    ("affnist", 2.0, ["affnist", "2", "(0, 2)"]),
    ("blur", 1.0, ["unknown family 'blur'", "rotation, scale"]),
])
def test_a_family_or_strength_out_of_range_is_one_line(family, strength, words):
    with pytest.raises(RobustnessError) as err:
        transform_images(random_images(), family, strength)
    message = str(err.value)
    assert "\n" not in message and all(word in message for word in words), message


def test_only_uint8_batches_are_transformed():
    with pytest.raises(RobustnessError, match=r"expected uint8 \(N, C, H, W\) images, got torch.float32"):
        transform_images(random_images().float(), "rotation", 10.0)


class NoCouplings(torch.nn.Module):
    """A CNN-like model: class scores without routing couplings."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(28 * 28, 10)

    def forward(self, x, quantize_levels=None):
        lengths = torch.sigmoid(self.linear(x.flatten(1)))
        return CapsuleOutput(lengths=lengths, capsules=lengths[..., None], couplings=None)


@pytest.fixture(scope="module")
def synthetic_setup(synthetic_raw, synthetic_train):
    """A small untrained CapsNet, its config, 64 synthetic-fashion images and how a trial reads them."""
    torch.manual_seed(0)
    cfg = tiny_cfg(synthetic_raw).with_overrides({"eval.robust_families": SOME, "eval.robust_images": 40})
    spec = get_dataset("synthetic-fashion")
    images, labels = synthetic_train
    split = Split(torch.from_numpy(images[:64].copy())[:, None], torch.from_numpy(labels[:64].copy()))
    return cfg, build_model(cfg, spec), split, BatchTransform.from_config(spec, cfg.data)


def test_the_frame_has_a_row_per_strength_and_identity_rows_are_the_plain_evaluation(synthetic_setup):
    cfg, model, split, transform = synthetic_setup
    frame = robustness(model, cfg, split, transform, 10)
    assert list(zip(frame["family"], frame["strength"])) == [(f, s) for f, strengths in SOME.items() for s in strengths]
    plain = evaluate_split(cfg, model, split, transform, 10, quantized=cfg.eval.final_quantized, parse_trees=True,
                           loss_kwargs=cfg.train.margin(0))
    identity = frame[[IDENTITY.get(f) == s for f, s in zip(frame["family"], frame["strength"])]]
    assert len(identity) == 3 and (identity["test/acc"] == plain["acc"]).all()
    assert (identity["test/loss"] == plain["loss"]).all() and (identity["entropy/mean"] == plain["entropy/mean"]).all()
    assert (frame["n_images"] == 64).all() and frame[list(ROUTING)].notna().all().all()
    assert frame[frame["family"] == "rotation"]["test/loss"].nunique() == 3  # the turned images are other inputs


def test_a_model_without_couplings_has_no_parse_tree_metrics(synthetic_setup):
    cfg, _, split, transform = synthetic_setup
    frame = robustness(NoCouplings(), cfg, split, transform, 10, families={"rotation": [0.0, 45.0]})
    assert not set(ROUTING) & set(frame.columns) and frame["test/acc"].notna().all()
    assert all(key.endswith(("test/acc", "test/loss", "n_images")) for key in robust_metrics(frame))


def test_metrics_read_back_from_a_results_table(synthetic_setup):
    cfg, model, split, transform = synthetic_setup
    frame = robustness(model, cfg, split, transform, 10, families={"rotation": [-15.0, 0.0, 15.0], "scale": [0.8]})
    metrics = robust_metrics(frame)
    assert metrics["robust/rotation/-15/test/acc"] == frame["test/acc"].iloc[0]
    assert metrics["robust/scale/0.8/entropy/mean"] == frame["entropy/mean"].iloc[3]
    other = {k: v + 1.0 for k, v in metrics.items()}
    rows = pd.DataFrame([{"trial_key": "a", "train.seed": 0, "unrelated": 1.0, **metrics},
                         {"trial_key": "b", "train.seed": 1, "curve/global/0/test/acc": 0.5, **other}])
    back = robust_from_results(rows)
    assert len(back) == 8 and set(back.columns) == {"trial_key", "train.seed", "family", "strength", *frame.columns}
    mine = back[back["trial_key"] == "a"].set_index(["family", "strength"])
    for row in frame.to_dict("records"):
        for column in ("test/acc", "test/loss", "n_images", *ROUTING):
            assert mine.loc[(row["family"], row["strength"]), column] == row[column]
    assert robust_from_results(rows[["trial_key", "unrelated"]]).empty


def test_a_trials_final_model_on_its_first_robust_images(synthetic_setup):
    cfg, model, split, transform = synthetic_setup
    run = SimpleNamespace(cfg=cfg, model=model, best={"model": None, "epoch": 0}, transform=transform,
                          splits=SimpleNamespace(test=split, spec=SimpleNamespace(num_classes=10)),
                          loss_kwargs=cfg.train.margin(0))
    metrics = trial_transformed(run, {"final/checkpoint_epoch": 2, "epoch": 2}, robust=True, equivariant=False)
    assert metrics["robust/rotation/90/n_images"] == 40 and "robust/affnist/1/parse_trees/total" in metrics
    final = [k for k in metrics if k.endswith("/test/acc") and "/plain/" not in k]
    assert len(final) == sum(len(v) for v in SOME.values())
    # +Q is the final forward here: the plain forward (the routing as trained) is measured beside it
    assert {k.replace("/plain/", "/") for k in metrics if "/plain/" in k} == {k for k in metrics if "/plain/" not in k}


def test_its_files_are_the_table_and_a_figure(synthetic_setup, tmp_path):
    cfg, model, split, transform = synthetic_setup
    frame = robustness(model, cfg, split, transform, 10)
    frame.insert(0, "model.name", "capsnet")
    frame.insert(1, "epoch", 1)
    written = write_robustness(frame, tmp_path, "a model")
    assert [p.name for p in written] == ["robustness.parquet", "robustness.csv", "robustness.png"]
    assert pd.read_parquet(written[0]).equals(frame) and written[2].stat().st_size > 10_000
    from rem.report.figures.robustness import robustness_figure

    seeds = pd.concat([frame.assign(series="cnn", seed=s).drop(columns=list(ROUTING)) for s in (0, 1)])
    assert robustness_figure(seeds, tmp_path / "cnn.png", "no couplings").stat().st_size > 10_000


def one_line_error(capsys, argv) -> str:
    assert rem_cli(["robustness", *argv]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0]
    return errors[0]


def test_the_command_reports_bad_input_in_one_line(tmp_path, capsys):
    err = one_line_error(capsys, [str(tmp_path / "nothing"), "--families", "rotation", "blur"])
    assert "--families: unknown family 'blur'" in err
    err = one_line_error(capsys, [str(tmp_path / "nothing")])
    assert "no such checkpoint folder or file" in err and str(tmp_path / "nothing") in err
    err = one_line_error(capsys, [str(tmp_path), "-S", "eval.robust_families={rotation: [0, 200]}"])
    assert "eval.robust_families.rotation: strength 200 is out of range; expected degrees in [-180, 180]" in err


@pytest.fixture(scope="module")
def trained(fashion_raw, tmp_path_factory):
    """A +Q CapsNet (small) trained two epochs on 1,024 real Fashion-MNIST images, tested on 512."""
    work = tmp_path_factory.mktemp("robust-trial")
    cfg = tiny_cfg(fashion_raw, epochs=2).with_overrides(
        {"data.dataset": "fashion-mnist", "data.train_subset": 1024, "data.test_subset": 512})
    from rem.training.loop import train

    return train(cfg, workdir=work), trial_checkpoint_dir(work)


@pytest.mark.realdata
def test_on_real_data_the_identity_is_the_final_evaluation_and_turning_costs_accuracy(trained):
    metrics, checkpoint = trained
    package, source, _ = load_source(str(checkpoint))
    frame = robustness_for_package(package, source, checkpoint, families=["rotation", "translation"])
    ev = package_evaluation(package, source, checkpoint)
    plain = evaluate_split(ev.cfg, ev.model, ev.test, ev.transform, ev.num_classes,
                           quantized=ev.cfg.eval.final_quantized, parse_trees=True, loss_kwargs=ev.loss_kwargs)
    rotation = frame[frame["family"] == "rotation"].set_index("strength")
    assert list(rotation.index) == [-60, -45, -30, -15, 0, 15, 30, 45, 60] and (frame["n_images"] == 512).all()
    assert rotation.loc[0, "test/acc"] == plain["acc"] == metrics["final/test/acc"]
    assert rotation.loc[0, "entropy/mean"] == plain["entropy/mean"]
    far = rotation[rotation.index.to_series().abs() >= 45]["test/acc"]
    assert far.mean() < rotation.loc[0, "test/acc"] - 0.05, rotation["test/acc"].to_dict()


@pytest.mark.realdata
def test_the_command_writes_the_table_and_figure_and_logs_to_the_run(trained, tmp_path, capsys):
    from mlflow.tracking import MlflowClient

    uri, run_id = run_holding_the_model(trained[1], tmp_path, "robust")
    out = tmp_path / "out"
    code = rem_cli(["robustness", run_id, "--images", "32", "--families", "scale", "affnist",
                    "--out", str(out), "--tracking-uri", uri])
    assert code == 0, capsys.readouterr().err
    table = pd.read_parquet(out / "robustness.parquet")
    assert len(table) == 8 and set(table["family"]) == {"scale", "affnist"} and (table["n_images"] == 32).all()
    assert (out / "robustness.png").stat().st_size > 10_000
    client = MlflowClient(uri)
    logged = client.get_run(run_id).data.metrics
    assert logged["robust/scale/0.7/test/acc"] == table["test/acc"].iloc[0]
    assert "robust/affnist/1/entropy/mean" in logged
    assert {a.path for a in client.list_artifacts(run_id, "robustness")} >= {
        "robustness/robustness.parquet", "robustness/robustness.csv", "robustness/robustness.png"}
