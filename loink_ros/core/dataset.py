"""Training data: sampled configurations with their task and cost, stored as .npz."""

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from loink_ros.core.forked_pool import forked_map, shared
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


def _label(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    problem = shared()
    return problem.task(x), problem.cost(x)


class _Parts:
    """Labelled chunks kept in a folder, so that a stopped run resumes; each part holds its
    configurations and is used only when they are the ones drawn now."""

    def __init__(self, folder: Path | None, key: dict):
        self.folder = folder
        if folder is None:
            return
        folder.mkdir(parents=True, exist_ok=True)
        stamp = folder / 'run.json'
        if stamp.exists() and json.loads(stamp.read_text()) != key:
            raise ValueError(f'{folder} holds the chunks of another run ({stamp.read_text()}); '
                             f'remove it or choose another output')
        stamp.write_text(json.dumps(key))

    def load(self, k: int, x: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        path = self.folder and self.folder / f'part{k:06d}.npz'
        if path is None or not path.exists():
            return None
        with np.load(path, allow_pickle=False) as part:
            return (part['y'], part['cost']) if np.array_equal(part['x'], x) else None

    def save(self, k: int, x: np.ndarray, y: np.ndarray, cost: np.ndarray) -> None:
        if self.folder is not None:
            tmp = self.folder / f'.part{k:06d}.npz'
            np.savez(tmp, x=x, y=y, cost=cost)
            os.replace(tmp, self.folder / f'part{k:06d}.npz')


def snap_to_bounds(x: np.ndarray, lower: np.ndarray, upper: np.ndarray, probability: float,
                   rng: np.random.Generator) -> np.ndarray:
    """`x` with each coordinate put on its lower or upper bound (even odds) with `probability`:
    samples on the range's faces, edges and corners, where uniform samples never are and
    where optima that touch a bound lie."""
    snap = rng.random(x.shape) < probability
    bound = np.where(rng.random(x.shape) < 0.5, lower, upper)
    return np.where(snap, bound, x)


def generate_dataset(problem: Problem, count: int, seed: int, chunk: int = 5000,
                     progress: bool = True, workers: int = 1,
                     parts: Path | None = None, on_bounds: float = 0.0) -> Dataset:
    """Sample `count` configurations and label them with task and cost; with `on_bounds` > 0
    each coordinate is then put on a bound with that probability (snap_to_bounds).

    The configurations are drawn here, chunk after chunk from one generator, so the dataset
    depends on (problem, count, seed, chunk, on_bounds) alone: `workers` > 1 labels the chunks in that
    many processes, and `parts` (a folder) keeps each labelled chunk, so that the same call
    after an interruption labels only what is missing."""
    rng = np.random.default_rng(seed)
    if not 0.0 <= on_bounds <= 1.0:
        raise ValueError(f'on_bounds is a probability, not {on_bounds}')
    xs = [problem.sample(min(chunk, count - start), rng) for start in range(0, count, chunk)]
    if on_bounds > 0.0:
        xs = [snap_to_bounds(x, problem.lower, problem.upper, on_bounds, rng) for x in xs]
    store = _Parts(parts, {'problem': problem.name, 'seed': seed, 'chunk': chunk,
                           'on_bounds': on_bounds})
    labels = [store.load(k, x) for k, x in enumerate(xs)]
    todo = [k for k, label in enumerate(labels) if label is None]
    with forked_map(workers, problem) as imap, tqdm(
            total=count, unit='sample', desc=f'dataset {problem.name}',
            initial=count - sum(len(xs[k]) for k in todo), disable=not progress) as bar:
        for k, label in zip(todo, imap(_label, [xs[k] for k in todo])):
            labels[k] = label
            store.save(k, xs[k], *label)
            bar.update(len(xs[k]))
    return Dataset(np.concatenate(xs), np.concatenate([y for y, _ in labels]),
                   np.concatenate([c for _, c in labels]), problem.name)


def save_dataset(dataset: Dataset, path: Path) -> None:
    """Write to .npz (plain arrays only)."""
    np.savez_compressed(path, x=dataset.x, y=dataset.y, cost=dataset.cost,
                        problem=np.array(dataset.problem))


def load_dataset(path: Path) -> Dataset:
    """Read a .npz written by save_dataset; never unpickles."""
    with np.load(path, allow_pickle=False) as data:
        return Dataset(data['x'], data['y'], data['cost'], str(data['problem']))


def load_datasets(paths: list[Path]) -> Dataset:
    """Several .npz files of one problem, rows concatenated in the given order."""
    parts = [load_dataset(path) for path in paths]
    problems = {part.problem for part in parts}
    if len(problems) != 1:
        raise ValueError(f'the datasets are of different problems: {sorted(problems)}')
    return Dataset(*(np.concatenate([getattr(part, name) for part in parts])
                     for name in ('x', 'y', 'cost')), parts[0].problem)
