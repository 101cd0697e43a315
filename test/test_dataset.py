"""Dataset generation: the same samples for any number of workers, and a stopped run resumes."""
import numpy as np
import pytest

from loink_ros.core.dataset import generate_dataset
from loink_ros.core.problems.registry import make_problem


@pytest.fixture(scope='module')
def planar3():
    return make_problem('planar3')


def test_workers_and_resuming_give_the_same_dataset(planar3, tmp_path):
    serial = generate_dataset(planar3, 2300, seed=4, chunk=500, progress=False)
    assert serial.x.shape == (2300, 3) and serial.y.shape == (2300, 1) and serial.cost.shape == (2300,)
    parallel = generate_dataset(planar3, 2300, seed=4, chunk=500, progress=False, workers=2,
                                parts=tmp_path / 'parts')
    for a, b in ((serial.x, parallel.x), (serial.y, parallel.y), (serial.cost, parallel.cost)):
        assert np.array_equal(a, b)
    assert np.allclose(serial.y, planar3.task(serial.x)) and np.allclose(serial.cost, planar3.cost(serial.x))
    # An interrupted run: two parts lost, one corrupted to another run's configurations.
    (tmp_path / 'parts' / 'part000001.npz').unlink()
    (tmp_path / 'parts' / 'part000003.npz').unlink()
    np.savez(tmp_path / 'parts' / 'part000002.npz', x=np.zeros((500, 3)), y=np.zeros((500, 1)),
             cost=np.zeros(500))
    resumed = generate_dataset(planar3, 2300, seed=4, chunk=500, progress=False, parts=tmp_path / 'parts')
    assert np.array_equal(resumed.y, serial.y) and np.array_equal(resumed.cost, serial.cost)


def test_another_seed_gives_other_samples_and_refuses_the_old_parts(planar3, tmp_path):
    first = generate_dataset(planar3, 600, seed=1, chunk=300, progress=False, parts=tmp_path / 'p')
    second = generate_dataset(planar3, 600, seed=2, chunk=300, progress=False)
    assert not np.array_equal(first.x, second.x)
    with pytest.raises(ValueError, match='another run'):
        generate_dataset(planar3, 600, seed=2, chunk=300, progress=False, parts=tmp_path / 'p')


def test_loink_dataset_writes_the_npz_and_drops_its_parts(planar3, tmp_path):
    import subprocess
    import sys

    from loink_ros.core.dataset import load_dataset

    out = tmp_path / 'planar3.npz'
    result = subprocess.run([sys.executable, '-m', 'loink_ros.tools.cli', 'dataset', 'planar3',
                             '--count', '1200', '--seed', '3', '--out', str(out), '--workers', '2'],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert 'wrote 1200 samples' in result.stdout
    assert not (tmp_path / 'planar3.npz.parts').exists()
    written = load_dataset(out)
    expected = generate_dataset(planar3, 1200, seed=3, progress=False)
    assert written.problem == 'planar3' and np.array_equal(written.x, expected.x)
    assert np.array_equal(written.y, expected.y)


def test_the_hsa_dataset_is_labelled_by_the_simulator_the_same_for_any_worker_count(tmp_path):
    hsa = make_problem('hsa')
    serial = generate_dataset(hsa, 400, seed=3, chunk=150, progress=False)
    assert serial.x.shape == (400, 6) and serial.y.shape == (400, 3) and serial.cost.shape == (400,)
    assert np.all((serial.x >= hsa.lower) & (serial.x <= hsa.upper))
    parallel = generate_dataset(hsa, 400, seed=3, chunk=150, progress=False, workers=2,
                                parts=tmp_path / 'parts')
    assert np.array_equal(serial.x, parallel.x) and np.array_equal(serial.y, parallel.y)
    assert np.allclose(serial.y[:20], hsa.task(serial.x[:20]), atol=1e-12)
    assert np.allclose(serial.cost, hsa.cost(serial.x))


def test_on_bounds_puts_coordinates_on_the_range_faces_and_is_reproducible(planar3, tmp_path):
    snapped = generate_dataset(planar3, 4000, seed=5, chunk=1000, progress=False, on_bounds=0.3)
    on_lower, on_upper = snapped.x == planar3.lower, snapped.x == planar3.upper
    share = (on_lower | on_upper).mean()
    assert 0.27 < share < 0.33 and 0.4 < on_lower.sum() / (on_lower | on_upper).sum() < 0.6
    assert np.all((snapped.x >= planar3.lower) & (snapped.x <= planar3.upper))
    assert np.allclose(snapped.y, planar3.task(snapped.x)) and np.allclose(snapped.cost, planar3.cost(snapped.x))
    again = generate_dataset(planar3, 4000, seed=5, chunk=1000, progress=False, workers=2, on_bounds=0.3)
    assert np.array_equal(snapped.x, again.x)
    uniform = generate_dataset(planar3, 4000, seed=5, chunk=1000, progress=False)
    assert not (uniform.x == planar3.lower).any() and not (uniform.x == planar3.upper).any()
    with pytest.raises(ValueError, match='probability'):
        generate_dataset(planar3, 10, seed=5, progress=False, on_bounds=1.5)


def test_several_datasets_of_one_problem_load_as_one(planar3, tmp_path):
    from loink_ros.core.dataset import Dataset, load_datasets, save_dataset

    first = generate_dataset(planar3, 300, seed=1, progress=False)
    second = generate_dataset(planar3, 200, seed=2, progress=False, on_bounds=0.5)
    save_dataset(first, tmp_path / 'a.npz')
    save_dataset(second, tmp_path / 'b.npz')
    both = load_datasets([tmp_path / 'a.npz', tmp_path / 'b.npz'])
    assert len(both) == 500 and both.problem == 'planar3'
    assert np.array_equal(both.x[:300], first.x) and np.array_equal(both.cost[300:], second.cost)
    save_dataset(Dataset(first.x, first.y, first.cost, 'other'), tmp_path / 'c.npz')
    with pytest.raises(ValueError, match='different problems'):
        load_datasets([tmp_path / 'a.npz', tmp_path / 'c.npz'])
    import subprocess
    import sys
    cli = [sys.executable, '-m', 'loink_ros.tools.cli']
    mixed = subprocess.run([*cli, 'train', '--data', str(tmp_path / 'a.npz'), str(tmp_path / 'c.npz'),
                            '--out', str(tmp_path / 'run')], capture_output=True, text=True, timeout=120)
    assert mixed.returncode == 1 and mixed.stderr.strip().splitlines() == [
        "loink train: the datasets are of different problems: ['other', 'planar3']"]
    bad = subprocess.run([*cli, 'dataset', 'planar3', '--on-bounds', '1.5', '--out', str(tmp_path / 'd.npz')],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and 'a probability in [0, 1], not 1.5' in bad.stderr
