"""Training: reproducible, validated, logged, resumable, checkpoints without pickles."""
import csv
import shutil

import numpy as np
import pytest
import torch

from loink_ros.core import training
from loink_ros.core.training import CHECKPOINT, LOG, LOG_FIELDS, load_trained, train


def same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def without_timings(history: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k != 'seconds'} for row in history]


def test_same_seed_gives_identical_losses_and_weights(tiny, tmp_path):
    again = train(tiny.dataset, tiny.problem, tiny.config, tmp_path / 'again', resume=False,
                  progress=False)
    assert without_timings(again.history) == without_timings(tiny.result.history)
    assert same_weights(again.net, tiny.result.net)


def test_a_different_seed_gives_a_different_network(tiny, tmp_path, make_config):
    # Guards the test above: equality must come from the seed, not from ignoring it.
    other = train(tiny.dataset, tiny.problem, make_config(seed=tiny.config.seed + 1, epochs=1),
                  tmp_path / 'other', resume=False, progress=False)
    first = tiny.result.net.state_dict()
    assert not all(torch.equal(first[k], v) for k, v in other.net.state_dict().items())


def test_validation_loss_falls(tiny):
    val = [row['val_loss'] for row in tiny.result.history]
    assert len(val) == tiny.config.epochs
    assert val[-1] < 0.8 * val[0]
    assert min(val[1:]) < val[0]


def test_log_has_one_row_per_epoch_matching_the_history(tiny):
    with (tiny.run_dir / LOG).open() as handle:
        reader = csv.DictReader(handle)
        assert reader.fieldnames == LOG_FIELDS
        rows = list(reader)
    assert [int(float(r['epoch'])) for r in rows] == list(range(1, tiny.config.epochs + 1))
    for row, expected in zip(rows, tiny.result.history):
        for key in LOG_FIELDS:
            assert float(row[key]) == pytest.approx(expected[key], rel=1e-12)


def test_checkpoint_loads_with_weights_only(tiny):
    state = torch.load(tiny.run_dir / CHECKPOINT, map_location='cpu', weights_only=True)
    assert state['epoch'] == tiny.config.epochs
    assert state['problem'] == 'planar3'
    assert {'model', 'optimizer', 'scheduler', 'history', 'config', 'normalization',
            'task_lower', 'task_upper'} <= state.keys()
    assert len(state['history']) == tiny.config.epochs
    # The stored weights are the trained network's (in float32, as trained).
    for key, value in tiny.result.net.state_dict().items():
        assert torch.allclose(state['model'][key].double(), value, atol=1e-7), key


class Interrupted(Exception):
    """Stands for Ctrl-C / a killed job in the middle of a run."""


def test_resume_continues_from_the_checkpoint_and_matches_an_uninterrupted_run(
        tiny, tmp_path, monkeypatch):
    stop_after = 2
    write_log = training._write_log

    def write_then_stop(path, history):
        write_log(path, history)
        if len(history) == stop_after:
            raise Interrupted

    run = tmp_path / 'run'
    monkeypatch.setattr(training, '_write_log', write_then_stop)
    with pytest.raises(Interrupted):
        train(tiny.dataset, tiny.problem, tiny.config, run, progress=False)
    partial = torch.load(run / CHECKPOINT, map_location='cpu', weights_only=True)
    assert partial['epoch'] == stop_after

    epochs_run = []

    def write_and_count(path, history):
        epochs_run.append(len(history))
        write_log(path, history)

    monkeypatch.setattr(training, '_write_log', write_and_count)
    resumed = train(tiny.dataset, tiny.problem, tiny.config, run, progress=False)
    assert epochs_run == list(range(stop_after + 1, tiny.config.epochs + 1))
    history = resumed.history
    assert len(history) == tiny.config.epochs
    # The first epochs come from the checkpoint (same timings, so not re-run).
    assert history[:stop_after] == partial['history']
    assert without_timings(history) == without_timings(tiny.result.history)
    assert same_weights(resumed.net, tiny.result.net)
    with (run / LOG).open() as handle:
        assert len(list(csv.DictReader(handle))) == tiny.config.epochs


def test_resume_of_a_finished_run_trains_nothing(tiny, tmp_path):
    run = tmp_path / 'run'
    shutil.copytree(tiny.run_dir, run)
    before = (run / CHECKPOINT).read_bytes()
    result = train(tiny.dataset, tiny.problem, tiny.config, run, progress=False)
    assert (run / CHECKPOINT).read_bytes() == before
    assert same_weights(result.net, tiny.result.net)


@pytest.mark.parametrize('change', [{'lr': 1e-3}, {'seed': 99}, {'epochs': 6}],
                         ids=['lr', 'seed', 'epochs'])
def test_checkpoint_with_other_settings_is_refused(tiny, tmp_path, make_config, change):
    run = tmp_path / 'run'
    shutil.copytree(tiny.run_dir, run)
    before = (run / CHECKPOINT).read_bytes()
    with pytest.raises(ValueError, match='other settings'):
        train(tiny.dataset, tiny.problem, make_config(**change), run, progress=False)
    assert (run / CHECKPOINT).read_bytes() == before


def test_load_trained_gives_a_float64_cpu_network(tiny):
    result = load_trained(tiny.run_dir)
    params = list(result.net.parameters())
    assert all(p.dtype == torch.float64 and p.device.type == 'cpu' for p in params)
    assert not result.net.training
    assert result.problem == 'planar3'
    assert (result.task_lower < result.task_upper).all()
    assert result.config == tiny.config


def test_a_diverging_run_stops_with_where_and_keeps_no_nan_model(tiny, tmp_path, make_config):
    config = make_config(lr=1e6, lr_final=1e6, epochs=2)
    with pytest.raises(training.TrainingDiverged) as err:
        train(tiny.dataset, tiny.problem, config, tmp_path, resume=False, progress=False)
    message = str(err.value)
    assert 'training diverged at epoch 1, batch' in message and 'normalised batch: x in' in message
    assert 'learning rate 1e+06' in message and 'no checkpoint was written' in message
    assert not (tmp_path / CHECKPOINT).exists()


def test_non_finite_samples_are_refused_before_training(tiny, tmp_path):
    data = tiny.dataset.subset(np.arange(len(tiny.dataset)))
    data.cost[[3, 7]] = np.inf
    with pytest.raises(training.TrainingDiverged, match=r'2 of \d+ samples are not finite \(rows \[3, 7\]'):
        train(data, tiny.problem, tiny.config, tmp_path, resume=False, progress=False)


def test_the_same_seed_gives_the_same_network_whatever_threads_the_process_set(tiny, tmp_path):
    """The run sets torch's thread count itself (config.threads) and gives the process its own
    back: what ran before in the process (a bench setting one thread, a user's four) does not
    change the result."""
    before = torch.get_num_threads()
    other = tiny.config.threads + 2
    torch.set_num_threads(other)
    try:
        again = train(tiny.dataset, tiny.problem, tiny.config, tmp_path / 'again', resume=False,
                      progress=False)
        assert torch.get_num_threads() == other
    finally:
        torch.set_num_threads(before)
    assert without_timings(again.history) == without_timings(tiny.result.history)
    assert same_weights(again.net, tiny.result.net)


def test_a_thread_count_below_one_is_refused(tiny, tmp_path, make_config):
    with pytest.raises(ValueError, match='threads must be at least 1'):
        train(tiny.dataset, tiny.problem, make_config(threads=0), tmp_path, progress=False)
