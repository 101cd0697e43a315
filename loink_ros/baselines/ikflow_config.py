"""The IKFlow baseline's settings, without torch (the CLI builds its options from them)."""

from dataclasses import dataclass


@dataclass
class IkflowConfig:
    """IKFlow's published Panda model has 12 blocks of 1024-wide, 3-layer subnets."""

    blocks: int = 12
    width: int = 1024
    layers: int = 3
    clamp: float = 2.5          # GLOW's soft clamp of the log-scales
    softflow: float = 1e-3      # largest softflow noise std (normalised configurations)
    epochs: int = 20
    batch_size: int = 512
    lr: float = 5e-4
    lr_final: float = 1e-5
    val_fraction: float = 0.02
    seed: int = 0
