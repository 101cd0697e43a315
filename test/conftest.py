"""Shared fixtures: a tiny planar3 model, trained and exported once per test session.

The model is deliberately poor (a few CPU seconds of training): the tests check the
machinery (training, export, runtime, CLI), not the accuracy of a shipped model.
"""
from dataclasses import dataclass
from pathlib import Path

import pytest

# Dataset size, seeds and architecture of the tiny model (kept small: a few seconds).
TINY_SAMPLES = 4000
DATA_SEED = 0
TRAIN_SEED = 3
TINY_EPOCHS = 4


@dataclass
class TinyModel:
    """What the session fixture built: inputs of the training run and its outputs."""

    problem: object      # Planar3Problem
    dataset: object      # Dataset
    config: object       # TrainConfig
    run_dir: Path        # checkpoint.pt, log.csv
    json_path: Path
    onnx_path: Path
    result: object       # TrainResult (float64 net on the CPU)


def tiny_config(**changes):
    """The tiny model's TrainConfig, with optional field changes."""
    from loink_ros.core.network.loink_net import NetworkConfig
    from loink_ros.core.training import TrainConfig
    settings = dict(network=NetworkConfig(blocks=[16, 16], depth=2, cost_hidden=[16]),
                    epochs=TINY_EPOCHS, batch_size=256, lr=5e-3, seed=TRAIN_SEED, device='cpu')
    settings.update(changes)
    return TrainConfig(**settings)


@pytest.fixture(scope='session')
def make_config():
    """tiny_config, for tests that train variants of the tiny model."""
    return tiny_config


@pytest.fixture(scope='session')
def tiny(tmp_path_factory) -> TinyModel:
    from loink_ros.core.dataset import generate_dataset
    from loink_ros.core.export import export_model
    from loink_ros.core.problems.planar3 import Planar3Problem
    from loink_ros.core.training import train

    root = tmp_path_factory.mktemp('tiny_model')
    problem = Planar3Problem()
    dataset = generate_dataset(problem, TINY_SAMPLES, DATA_SEED, progress=False)
    config = tiny_config()
    result = train(dataset, problem, config, root / 'run', resume=False, progress=False)
    onnx_path, json_path = export_model(result, problem, root / 'tiny')
    return TinyModel(problem, dataset, config, root / 'run', json_path, onnx_path, result)


@pytest.fixture(scope='session')
def tiny_solver(tiny):
    """A numpy-backend LOInKSolver on the tiny model."""
    from loink_ros.core.runtime.model_file import load_model
    from loink_ros.core.runtime.solver import LOInKSolver
    return LOInKSolver(load_model(str(tiny.json_path)), tiny.problem)
