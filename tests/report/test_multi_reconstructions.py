"""MultiMNIST's reconstruction figure (pipeline/studies/claims/multi_reconstructions.py) and the claims publication's
figures from trained models (pipeline/studies/claims/model_figures.py): the overlay's colours on hand-made arrays; the
figure of a seeded, untrained CapsNet with its decoder on generated pairs (each digit decoded from its own label's
capsule, the panels drawn from those reconstructions, the PNG at its designed size); a trained trial's model package
drawn end to end; which trials the publication draws, and that one it cannot draw is a warning, not a failure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from pipeline.studies.claims import model_figures as claims_figures
from pipeline.studies.claims.multi_reconstructions import (
    figure_size,
    overlay,
    overlay_figure,
    reconstruct_pairs,
    reconstruction_overlay_figure,
    reconstruction_overlay_of,
)
from rem.data import BatchTransform
from rem.data.multi import CANVAS
from rem.evaluate import count_correct
from rem.models import create_model
from rem.report.figures.style import DPI, plt
from rem.tracking.model_sources import SourceError, load_source, package_evaluation
from rem.training.checkpoint import final_checkpoint
from rem.training.loop import train
from tests.data.test_multi import _splits, raw  # noqa: F401 (raw: the generated IDX files, a fixture)
from tests.report.test_report import final_row
from tests.tiny_trials import SMALL_CAPSNET
from tests.training.test_multi_train import NAME, _cfg, synthetic_pairs  # noqa: F401 (a fixture)

PAIRS = 8


def test_overlay_puts_the_first_image_in_red_and_the_second_in_green():
    first = np.array([[1.0, 0.0, 0.5], [0.0, 0.0, 2.0]])
    second = np.array([[0.0, 1.0, 0.5], [0.0, 0.25, -1.0]])
    rgb = overlay(first, second)
    assert rgb.shape == (2, 3, 3) and rgb.dtype == np.float32
    assert np.array_equal(rgb[..., 0], np.clip(first, 0, 1)) and np.array_equal(rgb[..., 1], np.clip(second, 0, 1))
    assert not rgb[..., 2].any()  # blue is never drawn: where both have ink is yellow
    assert rgb[0, 2].tolist() == [0.5, 0.5, 0.0]
    with pytest.raises(ValueError, match="two \\(H, W\\) images of one size"):
        overlay(first, second[:1])


def tiny_capsnet() -> torch.nn.Module:
    torch.manual_seed(0)
    return create_model("capsnet", in_shape=(1, CANVAS, CANVAS), num_classes=10, decoder=True, **SMALL_CAPSNET)


def png_size(path) -> tuple[int, int]:
    """(width, height) in pixels of a PNG."""
    height, width = plt.imread(path).shape[:2]
    return width, height


def expected_pixels(pairs: int, rows: int) -> tuple[int, int]:
    width, height = figure_size(pairs, rows)
    return round(width * DPI), round(height * DPI)


def test_each_panel_shows_the_reconstruction_of_its_own_label(raw, tmp_path):  # noqa: F811
    test = _splits(raw).test.head(PAIRS)
    transform = BatchTransform(_splits(raw).spec, augment=False)
    model = tiny_capsnet().train()
    pairs = reconstruct_pairs(model, test.images, test.labels, transform=transform, parts=test.parts)
    assert model.training  # run in eval mode, its mode given back
    with torch.inference_mode():
        x, _ = transform(test.images, train=False)
        model.eval()
        out = model(x, test.labels)
        alone = [model(x, test.labels[:, k]).reconstruction[:, 0].numpy() for k in range(2)]
    assert pairs.reconstructions.shape == (PAIRS, 2, CANVAS, CANVAS)
    for k in range(2):  # masked by the TRUE labels: the first from the first label's capsule, the second likewise
        assert np.allclose(pairs.reconstructions[:, k], alone[k], atol=1e-6)
    assert np.allclose(pairs.parts, test.parts[:, :, 0].numpy() / 255.0)
    assert np.array_equal(pairs.labels, test.labels.numpy())
    assert pairs.predicted.tolist() == out.lengths.topk(2, dim=1).indices.tolist()
    assert int(pairs.correct.sum()) == int(count_correct(torch.from_numpy(pairs.predicted), test.labels))

    fig = overlay_figure(pairs, "tiny")
    axes = np.array(fig.axes).reshape(3, -1)  # rows: input, each digit, reconstructions
    for k in range(PAIRS):
        drawn = np.asarray(axes[2, k].images[0].get_array())
        assert np.array_equal(drawn[..., 0], pairs.reconstructions[k, 0])  # red: the first label's
        assert np.array_equal(drawn[..., 1], pairs.reconstructions[k, 1])  # green: the second label's
        assert np.array_equal(np.asarray(axes[1, k].images[0].get_array()), overlay(*pairs.parts[k]))
        assert axes[2, k].get_title().endswith("✗") == (not pairs.correct[k])
    plt.close(fig)

    path = reconstruction_overlay_figure(model, test.images, test.labels, tmp_path / "multi.png", "tiny",
                                         transform=transform, parts=test.parts)
    assert path.is_file() and png_size(path) == expected_pixels(PAIRS, 3)
    without = reconstruction_overlay_figure(model, test.images[:3], test.labels[:3], tmp_path / "three.png",
                                            transform=transform)
    assert png_size(without) == expected_pixels(3, 2)  # no digits row; a few pairs keep the caption's width


def test_single_labels_or_a_model_without_decoder_are_refused(raw):  # noqa: F811
    test, spec = _splits(raw).test.head(2), _splits(raw).spec
    transform = BatchTransform(spec, augment=False)
    with pytest.raises(ValueError, match="two labels per image"):
        reconstruct_pairs(tiny_capsnet(), test.images, test.labels[:, 0], transform=transform)
    plain = create_model("capsnet", in_shape=(1, CANVAS, CANVAS), num_classes=10, **SMALL_CAPSNET)
    with pytest.raises(ValueError, match="has no decoder"):
        reconstruct_pairs(plain, test.images, test.labels, transform=transform)


def test_a_trained_trials_package_draws_its_figure(synthetic_pairs, synthetic_raw, tmp_path):  # noqa: F811
    train(_cfg(NAME, synthetic_raw, tmp_path, "capsnet", decoder=True), workdir=tmp_path / "work")
    package, source, _ = load_source(str(final_checkpoint(tmp_path / "work")))
    trained = package_evaluation(package, source, tmp_path, test_images=4)
    path = reconstruction_overlay_of(trained, tmp_path / "figure.png")
    assert path.is_file() and png_size(path) == expected_pixels(4, 2)  # the package's split: no digits row


def publication_results() -> pd.DataFrame:
    """Finished trials: CapsNet with a decoder on pairs (seeds 43, 42), without one, with one on single images, and
    the CNN on pairs."""
    rows = [final_row("dec-43", "multifashion", "capsnet", 43, 0.5, **{"model.decoder": True}),
            final_row("dec-42", "multifashion", "capsnet", 42, 0.5, **{"model.decoder": True}),
            final_row("plain", "multifashion", "capsnet", 42, 0.5, **{"model.decoder": False}),
            final_row("single", "fashion-mnist", "deepcaps", 42, 0.9, **{"model.decoder": True}),
            final_row("cnn", "multifashion", "cnn_matched", 42, 0.5, **{"model.decoder": False})]
    return pd.DataFrame(rows).assign(sweep_id="claims-0")


def test_publishing_draws_one_figure_per_pair_dataset_from_a_capsule_decoder_arm(tmp_path, monkeypatch, capsys):
    assert claims_figures.decoder_trials(publication_results())["trial_key"].tolist() == ["dec-42"]
    drawn = []

    def fake_package(cfg, row, checkpoints):
        if row["trial_key"] == "gone":
            raise SourceError("gone: no such checkpoint")
        return {"trial": row["trial_key"]}, "fake"

    def fake_draw(package, source, repo_root, path, device):
        drawn.append((package["trial"], path.relative_to(tmp_path).as_posix()))
        return path

    monkeypatch.setattr(claims_figures, "locate_checkpoints", lambda cfg, root, sweeps: ({}, []))
    monkeypatch.setattr(claims_figures, "trial_package", fake_package)
    monkeypatch.setattr(claims_figures, "reconstruction_overlay_for_package", fake_draw)
    cfg = _cfg("multifashion", tmp_path, tmp_path, "capsnet")
    claims_figures.claims_figures(cfg, tmp_path, publication_results())
    assert drawn == [("dec-42", "figures/multi_reconstructions_multifashion.png")]
    gone = publication_results().replace({"dec-42": "gone", "dec-43": "gone-too"})
    gone = gone[gone["trial_key"] != "gone-too"]
    assert claims_figures.multi_reconstruction_figures(cfg, tmp_path, gone) == []
    said = capsys.readouterr().err
    assert "multi_reconstructions_multifashion.png not drawn for trial gone (SourceError: gone" in said
