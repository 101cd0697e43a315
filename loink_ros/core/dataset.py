"""Training data: sampled configurations with their task and cost, stored as .npz."""

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from loink_ros.core.problems.problem import Problem


@dataclass
class Dataset:
    """Configurations x (N, n), tasks y (N, p), costs (N,)."""

    x: np.ndarray
    y: np.ndarray
    cost: np.ndarray
    problem: str

    def __len__(self) -> int:
        return len(self.x)

    def split(self, val_fraction: float, seed: int) -> tuple['Dataset', 'Dataset']:
        """Random train / validation split."""
        order = np.random.default_rng(seed).permutation(len(self))
        cut = len(self) - int(round(val_fraction * len(self)))
        return self.subset(order[:cut]), self.subset(order[cut:])

    def subset(self, index: np.ndarray) -> 'Dataset':
        """Rows `index` of this dataset."""
        return Dataset(self.x[index], self.y[index], self.cost[index], self.problem)


def generate_dataset(problem: Problem, count: int, seed: int, chunk: int = 5000,
                     progress: bool = True) -> Dataset:
    """Sample `count` configurations and label them with task and cost."""
    rng = np.random.default_rng(seed)
    xs, ys, costs = [], [], []
    with tqdm(total=count, desc=f'dataset {problem.name}', unit='sample', disable=not progress) as bar:
        for start in range(0, count, chunk):
            x = problem.sample(min(chunk, count - start), rng)
            xs.append(x)
            ys.append(problem.task(x))
            costs.append(problem.cost(x))
            bar.update(len(x))
    return Dataset(np.concatenate(xs), np.concatenate(ys), np.concatenate(costs), problem.name)


def save_dataset(dataset: Dataset, path: Path) -> None:
    """Write to .npz (plain arrays only)."""
    np.savez_compressed(path, x=dataset.x, y=dataset.y, cost=dataset.cost,
                        problem=np.array(dataset.problem))


def load_dataset(path: Path) -> Dataset:
    """Read a .npz written by save_dataset; never unpickles."""
    with np.load(path, allow_pickle=False) as data:
        return Dataset(data['x'], data['y'], data['cost'], str(data['problem']))
