"""The sections of params.yaml, one frozen dataclass each (`rem.config.root.Config` holds them all)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

# The robustness families' default strengths (rem.analysis.robustness.families says what each means).
DEFAULT_FAMILIES: dict[str, list[float]] = {
    "rotation": [-60.0, -45.0, -30.0, -15.0, 0.0, 15.0, 30.0, 45.0, 60.0],
    "scale": [0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3],
    "shear": [-0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3],
    "translation": [-6.0, -4.0, -2.0, 0.0, 2.0, 4.0, 6.0],
    "affnist": [1.0],
}


class ConfigError(ValueError):
    """A params.yaml key is unknown, ill-typed or out of range, found when the config is read, or later by the data
    or a registry: a refusal, which the commands print as one line naming the key (any other error is a bug)."""


@dataclass(frozen=True)
class DataConfig:
    dataset: str = "fashion-mnist"
    root: str = "data/raw"  # fetched, verified files; relative paths are taken from the repo root
    mirror: str = "../shared/data"  # a folder of <dataset>/<file> copies; env REM_DATA_MIRROR wins
    system_root: str = "/usr/share/datasets"  # Debian's dataset packages install here
    download: bool = True  # try the canonical URLs when no local copy exists
    val_size: int = 5500  # held out of the training set, as REM does
    split_seed: int = 0  # fixed shuffle for the train/val split (REM: numpy seed 0)
    train_subset: int = 0  # 0 = every remaining training image; >0 caps it (quick runs)
    val_subset: int = 0  # 0 = all val_size images are evaluated each epoch
    test_subset: int = 0  # 0 = the full test set (the paper's metrics need it)
    augment: bool = True  # the dataset's REM augmentation (shifts, flips, jitter, crops) on training batches
    # Per-dataset protocol magnitudes (REM's table, rem-paper.md §2); each applies only to its datasets.
    shift: int = 2  # mnist/fashion-mnist: random shift in px (REM: RandomCrop(28, padding=2))
    flip: Literal["auto", "on", "off"] = "auto"  # auto: fashion-mnist and CIFAR-10/image folders flip, digits do not
    resize: int = 24  # cifar10/svhn/image folders: REM resizes whole images to 24x24 (0 keeps the stored size)
    brightness: float = 0.25  # cifar10/svhn/image folders: ColorJitter brightness (factor in [1-b, 1+b])
    contrast: list = field(default_factory=lambda: [0.2, 1.8])  # ... and contrast factor range (REM: 0.2-1.8)
    mean: list = field(default_factory=list)  # per-channel normalisation override; empty = the dataset's REM values
    std: list = field(default_factory=list)  # ... its std (same length as mean)
    prepared: str = "data/prepared"  # decoded uint8 arrays cached here, keyed by source checksums ("" = no cache)
    # The selected dataset's own options, as its family declares them (docs/settings.md lists every family's)
    options: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ModelConfig:
    name: str = "capsnet"
    decoder: bool = False  # REM's headline runs have no decoder
    recon_weight: float = 0.0005  # times the per-image sum of squared errors (Sabour)
    routing_iterations: int = 3
    # The routing between the last two capsule layers (rem.routing's registry): "" = the architecture's own
    # (CapsNet: dynamic, γ-CapsNet: scaled_distance, Efficient-CapsNet: self_attention)
    routing: str = ""
    # The family's own options and the selected routing's, as each declares them (`rem.config.options`)
    options: dict = field(default_factory=dict)
    routing_options: dict = field(default_factory=dict)


@dataclass(frozen=True)
class TrainConfig:
    epochs: int = 1
    batch_size: int = 128
    eval_batch_size: int = 500
    lr: float = 1e-3
    lr_decay: float = 0.99  # ExponentialLR per epoch (REM)
    # linear rise from lr / warmup_steps to lr over the first steps; 0 = none (REM). Without it Adam's first full
    # steps saturate CapsNet's class capsules on 36x36 pairs.
    warmup_steps: int = 0
    seed: int = 42
    # bf16 autocast (squash and routing stay fp32) or fp32; auto: bf16 where the device computes it natively
    precision: Literal["auto", "fp32", "bf16"] = "auto"
    # torch.compile or eager: auto follows rem.training.paths' measured rule per architecture and device kind
    compile: Literal["auto", True, False] = "auto"
    # On a GPU: the training step and the search's validation passes as CUDA graphs (rem.training.graphs); off
    # until a GPU has measured it; ignored on the CPU.
    cuda_graphs: bool = False
    m_pos: float = 0.9
    m_neg: float = 0.1
    lam: float = 0.5
    # REM's DeepCaps switches to a "hard" margin loss after epoch 100 (m+ 0.95, m- 0.05, lambda 0.8); 0 = never
    hard_margin_epoch: int = 0
    hard_margin: list = field(default_factory=lambda: [0.95, 0.05, 0.8])  # [m_pos, m_neg, lam] after the switch
    max_steps_per_epoch: int = 0  # 0 = a full pass over the training subset
    # REM's stop: no strict validation-loss improvement for this many epochs (REM: 200); 0 = run every epoch
    patience: int = 0
    # patience cannot stop a trial before this many epochs: a run that must see a number of images (a horizon) sets it
    min_epochs: int = 0
    # a progress line (epoch, step, loss, s/step, ETA) at least this often while a trial runs; 0 = none
    progress_every_s: float = 20.0
    device: str = "auto"  # auto (the GPU Ray gave the trial, else the CPU) | cpu | cuda | cuda:N (rem.device)
    deterministic: bool = False  # reproducible GPU kernels, cuDNN's autotuner off (rem.device.prepare_backend)
    tf32: bool = False  # fp32 convolutions and matmuls on a GPU may run in TF32 (faster, 10-bit mantissa)
    checkpoint_every: int = 1  # epochs between full checkpoints (state.pt); the last epoch always writes one

    def margin(self, epoch: int) -> dict[str, float]:
        """Margin-loss constants for 0-based `epoch` (the hard margin from epoch `hard_margin_epoch` on)."""
        if self.hard_margin_epoch and epoch >= self.hard_margin_epoch:
            m_pos, m_neg, lam = self.hard_margin
            return {"m_pos": float(m_pos), "m_neg": float(m_neg), "lam": float(lam)}
        return {"m_pos": self.m_pos, "m_neg": self.m_neg, "lam": self.lam}


@dataclass(frozen=True)
class EvalConfig:
    levels: int = 11  # K quantization levels of the couplings (REM: 11 for 10 classes)
    quantized_forward: bool = False  # per-epoch metrics with the +Q forward (REM logs them unquantized)
    split: Literal["test", "val"] = "test"  # where parse trees are counted (REM: test)
    # The paper's final evaluation: +Q forward; "auto": the best-validation-loss weights unpruned, else the last
    final_quantized: bool = True
    final_checkpoint: Literal["auto", "best", "last"] = "auto"
    # Class-layer coupling levels where REM's code differs from `levels` (keys and the +Q forward use it)
    levels_per_model: dict = field(default_factory=lambda: {"gamma_capsnet": 6})
    # A routing-layer input capsule is "dead" when its length stays below this on every evaluated image.
    dead_capsule_threshold: float = 0.01
    # The final model's test metrics at each magnitude sparsity (rem.analysis.sparsity_curve), for trials of
    # `curve_methods`, as `curve/<scope>/<sparsity %>/<metric>`; `curve_images` > 0: the first that many images.
    sparsity_curve: bool = False
    curve_methods: list = field(default_factory=lambda: ["none", "rem"])
    curve_images: int = 0
    curve_sparsities: list = field(default_factory=lambda: [0.0, 0.2, 0.4, 0.6, 0.8, 0.9, 0.95, 0.98])
    # The final model's test metrics under each family's transforms (rem.analysis.robustness), as
    # `robust/<family>/<strength>/<metric>`; `robust_images` as `curve_images`; `robust_seed` fixes affnist's maps.
    robustness: bool = False
    robust_images: int = 0
    robust_families: dict = field(default_factory=lambda: {k: list(v) for k, v in DEFAULT_FAMILIES.items()})
    robust_seed: int = 0
    # Equivariance (rem.analysis.equivariance): on the robustness images, the held-out error of a linear map from
    # the class poses of x to those of g.x, as `equivariance/<family>/<strength>/error` (+Q models also `plain/`).
    equivariance: bool = False
    # Each epoch, the class layer's coupling entropy and vote agreement after each routing iteration on the first
    # `iteration_images` validation images, as `routing/iter<t>/<metric>` (rem.analysis.routing_iterations)
    iteration_curves: bool = False
    iteration_images: int = 500

    def levels_for(self, model_name: str) -> int:
        return int(self.levels_per_model.get(model_name, self.levels))


@dataclass(frozen=True)
class SweepConfig:
    name: str = "rem"  # experiment name in Ray and MLflow
    # One mapping of axes (their product) or a list of them (the union); see rem.results.grid.
    grid: dict | list = field(default_factory=lambda: {"model.name": ["capsnet"], "train.seed": [42]})
    storage_path: str = "results/ray"  # Ray Tune experiment storage: a local folder (made absolute) or a URI
    results: str = "results/sweep.parquet"
    cpus_per_trial: float = 1.0
    gpus_per_trial: float = 0.0  # a fraction lets several small capsule trials share one GPU
    resources_per_model: dict = field(default_factory=dict)  # e.g. {deepcaps: {cpu: 4, gpu: 1}} beats the defaults
    scheduler: Literal["fifo", "asha"] = "fifo"  # FIFO: every table cell needs its full run; ASHA for tuning
    asha_grace_epochs: int = 1  # ASHA: epochs every trial gets before it can be stopped
    asha_metric: str = "val/loss"  # ASHA ranks trials by this reported metric (minimised)
    max_concurrent: int = 0  # 0 = as many as the cluster's resources allow
    max_failures: int = 2  # retries of a crashed trial, from its last checkpoint
    time_limit_s: float = 0.0  # per-trial wall-clock limit; 0 = none
    tracking_uri: str = ""  # empty: env MLFLOW_TRACKING_URI, else sqlite:///<repo>/mlflow.db
    verbose: int = 1  # Tune's status table: 0 silent, 1 status updates, 2 per-result lines
    log_model: bool = True  # each trial's final model as an MLflow artifact (false for huge sweeps)
    # MLflow's system metrics per trial, every 10 s; auto: on a GPU only, where they show how trials share it
    system_metrics: Literal["auto", "always", "never"] = "auto"


@dataclass(frozen=True)
class FetchConfig:
    # Fetched besides every dataset the selected profile's grid trains on (the fetch stage reads both).
    datasets: list = field(default_factory=list)


@dataclass(frozen=True)
class ReportConfig:
    out_dir: str = "reports"
    # Routing figures come from checkpoints and the first N real test images.
    figure_images: int = 200
    overlap_trees: int = 8  # parse trees drawn per overlap map (most frequent first)
    saliency_images: int = 6  # images per saliency figure
    graph_capsules: int = 16  # input capsules drawn in a parse-tree graph (all of them would be unreadable)
    checkpoint_figures: bool = True  # false: only the results-table figures (no checkpoints or data needed)
    log_to_mlflow: bool = True  # figures and tables as artifacts of the sweep's parent run, when reachable
    # The claim a run is designed to decide, named before it starts; the other claims on its page are secondary
    primary_endpoint: str = ""
    # A confirmatory paired comparison's committed design (rem.report.sequential.Design: arms, metric, direction,
    # alpha, looks, their nominal p, first seed); {} for a run that has none
    sequential: dict = field(default_factory=dict)
    # Each report table's own options by its registered name ({trials-per-arm: {decimals: 2}})
    options: dict = field(default_factory=dict)
