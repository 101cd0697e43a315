"""Training a LOInK network: seeded, validated, logged, resumable."""

import csv
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from loink_ros.core.dataset import Dataset
from loink_ros.core.network.loink_net import LOInKNet, NetworkConfig
from loink_ros.core.normalization import Normalization
from loink_ros.core.problems.problem import Problem

CHECKPOINT = 'checkpoint.pt'
LOG = 'log.csv'
LOG_FIELDS = ['epoch', 'train_loss', 'train_task', 'train_cost', 'val_loss', 'val_task',
              'val_cost', 'val_task_rmse', 'lr', 'seconds']


class TrainingDiverged(RuntimeError):
    """Training stopped on a non-finite loss (or data): the message says where and what the
    batch held; the last checkpoint, from the epoch before, is kept."""


@dataclass
class TrainConfig:
    """Training settings; `cost_weight` is the loss weight lambda. `threads` is torch's CPU
    thread count for the run: a float sum's order follows it, so the same seed gives the same
    losses and weights, bit for bit, only at the same thread count (docs/TRAINING.md)."""

    network: NetworkConfig = field(default_factory=NetworkConfig)
    cost_weight: float = 1.0
    epochs: int = 60
    batch_size: int = 512
    lr: float = 2e-3
    lr_final: float = 1e-5
    val_fraction: float = 0.1
    seed: int = 0
    device: str = 'auto'
    threads: int = 1

    @classmethod
    def from_dict(cls, data: dict) -> 'TrainConfig':
        """Inverse of dataclasses.asdict."""
        return cls(**{**data, 'network': NetworkConfig(**data['network'])})


@dataclass
class TrainResult:
    """The trained network (on the CPU, float64) and what it needs to be exported."""

    net: LOInKNet
    normalization: Normalization
    history: list[dict]
    config: TrainConfig
    problem: str
    task_lower: np.ndarray
    task_upper: np.ndarray


def pick_device(name: str) -> torch.device:
    """'auto' means CUDA when available."""
    if name == 'auto':
        name = 'cuda' if torch.cuda.is_available() else 'cpu'
    return torch.device(name)


def _tensors(data: Dataset, norm: Normalization, device: torch.device) -> list[torch.Tensor]:
    arrays = [norm.x_to_net(data.x), norm.y_to_net(data.y),
              (data.cost - norm.cost_mean) / norm.cost_std]
    return [torch.as_tensor(a, dtype=torch.float32, device=device) for a in arrays]


def _check_data(dataset: Dataset) -> None:
    """TrainingDiverged naming the first rows of the dataset that are not finite."""
    bad = ~(np.isfinite(dataset.x).all(1) & np.isfinite(dataset.y).all(1)
            & np.isfinite(dataset.cost))
    if bad.any():
        rows = np.flatnonzero(bad)
        raise TrainingDiverged(f'{bad.sum()} of {len(dataset)} samples are not finite (rows '
                               f'{rows[:5].tolist()}, e.g. cost {dataset.cost[rows[0]]!r}); '
                               'the cost must be finite wherever the problem samples')


def _batch_report(epoch: int, index: int, steps: int, batch: list[torch.Tensor], lr: float,
                  what: str) -> str:
    """The NaN-loss stop's message: where it happened and what the batch held."""
    stats = ', '.join(f'{name} in [{float(t.min()):.3g}, {float(t.max()):.3g}]'
                      for name, t in zip(('x', 'y', 'cost'), batch))
    kept = (f'the checkpoint of epoch {epoch - 1} is kept' if epoch > 1
            else 'no checkpoint was written')
    return (f'training diverged at epoch {epoch}, batch {index + 1} of {steps} ({what}; '
            f'normalised batch: {stats}; learning rate {lr:.3g}); no model was written from '
            f'it and {kept}. Rerun with a lower learning rate (lr), a smaller cost_weight, or '
            'a cost without extreme values')


def _evaluate(net: LOInKNet, tensors: list[torch.Tensor], weight: float) -> list[float]:
    with torch.no_grad():
        return [float(v) for v in net.loss(*tensors, weight)]


@contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """torch's intra-op thread count set to `count` for the block, then restored."""
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def train(dataset: Dataset, problem: Problem, config: TrainConfig, out_dir: Path,
          resume: bool = True, progress: bool = True) -> TrainResult:
    """Train on `dataset`; checkpoints and log.csv go to `out_dir` after every epoch. The run
    sets what its result depends on (the seeds, torch's thread count) itself, so it does not
    depend on what the process did before."""
    if config.threads < 1:
        raise ValueError(f'threads must be at least 1, not {config.threads}')
    with torch_threads(config.threads):
        return _train(dataset, problem, config, out_dir, resume, progress)


def _train(dataset: Dataset, problem: Problem, config: TrainConfig, out_dir: Path,
           resume: bool, progress: bool) -> TrainResult:
    _check_data(dataset)
    out_dir.mkdir(parents=True, exist_ok=True)
    device = pick_device(config.device)
    torch.manual_seed(config.seed)
    train_set, val_set = dataset.split(config.val_fraction, config.seed)
    norm = Normalization.fit(train_set, problem.lower, problem.upper)
    net = LOInKNet(problem.dim, problem.task_dim, config.network).to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=config.lr)
    steps_per_epoch = -(-len(train_set) // config.batch_size)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(
        optimizer, T_max=config.epochs * steps_per_epoch, eta_min=config.lr_final)
    history, start = [], 0
    checkpoint_path = out_dir / CHECKPOINT
    if resume and checkpoint_path.exists():
        state = torch.load(checkpoint_path, map_location=device, weights_only=True)
        if TrainConfig.from_dict(state['config']) != config:   # keys added since: defaults
            raise ValueError(f'{checkpoint_path} was written with other settings; '
                             'use a new output folder or --no-resume')
        net.load_state_dict(state['model'])
        optimizer.load_state_dict(state['optimizer'])
        scheduler.load_state_dict(state['scheduler'])
        history, start = state['history'], state['epoch']
    train_t, val_t = _tensors(train_set, norm, device), _tensors(val_set, norm, device)
    epochs = tqdm(range(start, config.epochs), desc=f'train {problem.name}', unit='epoch',
                  initial=start, total=config.epochs, disable=not progress)
    for epoch in epochs:
        began = time.perf_counter()
        generator = torch.Generator().manual_seed(config.seed * 100003 + epoch)
        order = torch.randperm(len(train_set), generator=generator).to(device)
        totals = np.zeros(3)
        net.train()
        for index, batch in enumerate(order.split(config.batch_size)):
            tensors = [t[batch] for t in train_t]
            where = (epoch + 1, index, steps_per_epoch, tensors, scheduler.get_last_lr()[0])
            try:
                losses = net.loss(*tensors, config.cost_weight)
            except torch.linalg.LinAlgError as err:   # weights blown up: a singular Cayley map
                raise TrainingDiverged(_batch_report(*where, 'a weight matrix became singular')) from err
            if not torch.isfinite(losses[0]):
                total, task, cost = (float(v.detach()) for v in losses)
                raise TrainingDiverged(_batch_report(
                    *where, f'loss {total}, task {task}, cost {cost}'))
            optimizer.zero_grad()
            losses[0].backward()
            optimizer.step()
            scheduler.step()
            totals += [float(v.detach()) for v in losses]
        net.eval()
        val = _evaluate(net, val_t, config.cost_weight)
        if not np.all(np.isfinite(val)):
            raise TrainingDiverged(f'validation loss is {val[0]} after epoch {epoch + 1}; no '
                                   'model was written from it; rerun with a lower learning '
                                   'rate (lr)')
        values = [epoch + 1, *(totals / steps_per_epoch), *val,
                  np.sqrt(val[1] / problem.task_dim) * norm.y_std.mean(),
                  scheduler.get_last_lr()[0], time.perf_counter() - began]
        row = dict(zip(LOG_FIELDS, map(float, values)))
        history.append(row)
        epochs.set_postfix(val_task_rmse=f"{row['val_task_rmse']:.2e}", val_cost=f'{val[2]:.2e}')
        torch.save({'model': net.state_dict(), 'optimizer': optimizer.state_dict(),
                    'scheduler': scheduler.state_dict(), 'epoch': epoch + 1,
                    'history': history, 'config': asdict(config), 'problem': problem.name,
                    'normalization': norm.to_dict(), 'task_lower': train_set.y.min(0).tolist(),
                    'task_upper': train_set.y.max(0).tolist()}, checkpoint_path)
        _write_log(out_dir / LOG, history)
    return load_trained(out_dir)


def load_trained(out_dir: Path) -> TrainResult:
    """The network of the last checkpoint in `out_dir`, on the CPU in float64."""
    state = torch.load(out_dir / CHECKPOINT, map_location='cpu', weights_only=True)
    config = TrainConfig.from_dict(state['config'])
    norm = Normalization.from_dict(state['normalization'])
    net = LOInKNet(len(norm.x_lower), len(norm.y_mean), config.network)
    net.load_state_dict(state['model'])
    return TrainResult(net.double().eval(), norm, state['history'], config, state['problem'],
                       np.asarray(state['task_lower']), np.asarray(state['task_upper']))


def _write_log(path: Path, history: list[dict]) -> None:
    with path.open('w', newline='') as handle:
        writer = csv.DictWriter(handle, fieldnames=LOG_FIELDS)
        writer.writeheader()
        writer.writerows(history)
