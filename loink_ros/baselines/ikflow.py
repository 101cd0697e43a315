"""IKFlow (Ames, Morgan, Hermans, Kimmel, Bekris, RA-L 2022) as a baseline: a conditional
normalising flow of GLOW coupling blocks with random permutations, built with FrEIA (the
library IKFlow itself uses), conditioned on the task and the softflow noise scale, trained
by maximum likelihood on the same dataset as LOInK. Torch: tools and tests only.

Its answer to a task is the flow's inverse at a latent z: z = 0 (the mode), or the best of
K samples z ~ N(0, sigma^2 I) by true cost among those that reach the task (how IKFlow is
used). Stored as ONNX (the inverse, task -> configuration) + JSON, like LOInK's models.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from loink_ros.baselines.ikflow_config import IkflowConfig
from loink_ros.core.dataset import Dataset


def _subnet(width: int, layers: int):
    def build(inputs: int, outputs: int) -> nn.Module:
        sizes = [inputs] + [width] * layers
        hidden = [m for a, b in zip(sizes, sizes[1:]) for m in (nn.Linear(a, b), nn.LeakyReLU())]
        last = nn.Linear(sizes[-1], outputs)
        nn.init.zeros_(last.weight)   # each block starts as the identity
        nn.init.zeros_(last.bias)
        return nn.Sequential(*hidden, last)
    return build


def build_flow(dim: int, task_dim: int, config: IkflowConfig):
    """GLOW coupling blocks, each followed by a fixed random permutation; the condition is
    [normalised task; softflow scale]."""
    import FrEIA.framework as Ff
    import FrEIA.modules as Fm

    flow = Ff.SequenceINN(dim)
    for k in range(config.blocks):
        flow.append(Fm.GLOWCouplingBlock, cond=0, cond_shape=(task_dim + 1,),
                    subnet_constructor=_subnet(config.width, config.layers), clamp=config.clamp)
        flow.append(Fm.PermuteRandom, seed=config.seed * 1000 + k)
    return flow


@dataclass
class Normaliser:
    """Per-column mean and std of the configurations and the tasks."""

    x_mean: np.ndarray
    x_std: np.ndarray
    y_mean: np.ndarray
    y_std: np.ndarray

    @classmethod
    def of(cls, data: Dataset) -> 'Normaliser':
        return cls(data.x.mean(0), data.x.std(0), data.y.mean(0), data.y.std(0))


def _negative_log_likelihood(flow, x: torch.Tensor, y: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    """Mean -log p(x | y) (up to a constant) of x with softflow noise of std `noise`."""
    noisy = x + noise * torch.randn_like(x) if noise.abs().sum() > 0 else x
    z, log_jac = flow(noisy, c=[torch.cat([y, noise], 1)])
    return (0.5 * (z ** 2).sum(1) - log_jac).mean()


def train_ikflow(data: Dataset, config: IkflowConfig, progress: bool = True):
    """The trained flow, its normaliser and the per-epoch log (train and validation loss)."""
    torch.manual_seed(config.seed)
    train, val = data.split(config.val_fraction, config.seed)
    norm = Normaliser.of(train)
    flow = build_flow(data.x.shape[1], data.y.shape[1], config)

    def tensors(part):
        x = torch.as_tensor((part.x - norm.x_mean) / norm.x_std, dtype=torch.float32)
        y = torch.as_tensor((part.y - norm.y_mean) / norm.y_std, dtype=torch.float32)
        return x, y
    x, y = tensors(train)
    vx, vy = tensors(val)
    optimiser = torch.optim.Adam(flow.parameters(), lr=config.lr)
    steps = config.epochs * math.ceil(len(x) / config.batch_size)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, steps, eta_min=config.lr_final)
    log = []
    bar = tqdm(range(config.epochs), desc='train ikflow', unit='epoch', disable=not progress)
    for epoch in bar:
        began = time.perf_counter()
        flow.train()
        total = 0.0
        for batch in torch.randperm(len(x)).split(config.batch_size):
            noise = config.softflow * torch.rand(len(batch), 1)
            loss = _negative_log_likelihood(flow, x[batch], y[batch], noise)
            if not torch.isfinite(loss):
                raise FloatingPointError(f'IKFlow loss is {loss.item()} at epoch {epoch + 1}')
            optimiser.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(flow.parameters(), 1.0)
            optimiser.step()
            schedule.step()
            total += loss.item() * len(batch)
        flow.eval()
        with torch.no_grad():
            val_loss = _negative_log_likelihood(flow, vx, vy, torch.zeros(len(vx), 1)).item()
        log.append({'epoch': epoch + 1, 'train_loss': total / len(x), 'val_loss': val_loss,
                    'seconds': time.perf_counter() - began})
        bar.set_postfix(val_loss=f'{val_loss:.3f}')
    return flow, norm, log


class _Inverse(nn.Module):
    """(z, task) -> configuration, normalisation included; the softflow scale is 0."""

    def __init__(self, flow, norm: Normaliser):
        super().__init__()
        self.flow = flow
        for name, value in asdict(norm).items():
            self.register_buffer(name, torch.as_tensor(value, dtype=torch.float32))

    def forward(self, z: torch.Tensor, task: torch.Tensor) -> torch.Tensor:
        y = (task - self.y_mean) / self.y_std
        x, _ = self.flow(z, c=[torch.cat([y, torch.zeros_like(y[:, :1])], 1)], rev=True)
        return x * self.x_std + self.x_mean


def export_ikflow(flow, norm: Normaliser, config: IkflowConfig, log: list[dict], problem: str,
                  stem: Path) -> None:
    """stem.onnx (the inverse) and stem.json (config, normaliser, training log)."""
    inverse = _Inverse(flow, norm).eval()
    dim, task_dim = len(norm.x_mean), len(norm.y_mean)
    torch.onnx.export(inverse, (torch.zeros(1, dim), torch.zeros(1, task_dim)), str(stem.with_suffix('.onnx')),
                      input_names=['z', 'task'], output_names=['x'], dynamo=False,
                      dynamic_axes={'z': {0: 'batch'}, 'task': {0: 'batch'}, 'x': {0: 'batch'}})
    meta = {'kind': 'ikflow', 'problem': problem, 'config': asdict(config), 'log': log,
            'normaliser': {k: v.tolist() for k, v in asdict(norm).items()}}
    stem.with_suffix('.json').write_text(json.dumps(meta, indent=1) + '\n')


class IkflowSolver:
    """An exported IKFlow model, run with ONNX Runtime."""

    def __init__(self, stem: Path):
        import onnxruntime as ort

        self.meta = json.loads(stem.with_suffix('.json').read_text())
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        self.session = ort.InferenceSession(str(stem.with_suffix('.onnx')), options,
                                            providers=['CPUExecutionProvider'])
        self.dim = len(self.meta['normaliser']['x_mean'])

    def configurations(self, tasks: np.ndarray, z: np.ndarray) -> np.ndarray:
        """The flow's inverse at latents z (B, dim) for tasks (B, task_dim)."""
        return self.session.run(['x'], {'z': z.astype(np.float32),
                                        'task': tasks.astype(np.float32)})[0].astype(float)

    def solve(self, tasks: np.ndarray) -> np.ndarray:
        """z = 0: the flow's mode for each task."""
        tasks = np.atleast_2d(tasks)
        return self.configurations(tasks, np.zeros((len(tasks), self.dim)))
