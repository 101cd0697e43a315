"""The IKFlow baseline (baselines/ikflow.py): a short training, its ONNX inverse, invertibility."""
import json

import numpy as np
import pytest
import torch

from loink_ros.baselines.ikflow import IkflowSolver, _Inverse, export_ikflow, train_ikflow
from loink_ros.baselines.ikflow_config import IkflowConfig
from loink_ros.core.dataset import generate_dataset
from loink_ros.core.problems.registry import make_problem


@pytest.fixture(scope='module')
def trained():
    problem = make_problem('planar3')
    data = generate_dataset(problem, 6000, seed=9, progress=False)
    config = IkflowConfig(blocks=4, width=32, layers=2, epochs=4, batch_size=256)
    return problem, data, config, *train_ikflow(data, config, progress=False)


def test_a_short_training_lowers_the_validation_loss(trained):
    *_, log = trained
    assert len(log) == 4 and all(np.isfinite(e['val_loss']) for e in log)
    assert log[-1]['val_loss'] < log[0]['val_loss']


def test_the_flow_inverts_and_its_onnx_export_agrees(trained, tmp_path):
    problem, data, config, flow, norm, log = trained
    x = torch.as_tensor((data.x[:50] - norm.x_mean) / norm.x_std, dtype=torch.float32)
    y = torch.as_tensor((data.y[:50] - norm.y_mean) / norm.y_std, dtype=torch.float32)
    cond = [torch.cat([y, torch.zeros(50, 1)], 1)]
    with torch.no_grad():
        z, _ = flow(x, c=cond)
        back, _ = flow(z, c=cond, rev=True)
    assert torch.allclose(back, x, atol=1e-4)
    export_ikflow(flow, norm, config, log, problem.name, tmp_path / 'flow')
    solver = IkflowSolver(tmp_path / 'flow')
    latents = np.random.default_rng(1).normal(size=(50, problem.dim))
    with torch.no_grad():
        expected = _Inverse(flow, norm)(torch.as_tensor(latents, dtype=torch.float32),
                                        torch.as_tensor(data.y[:50], dtype=torch.float32)).numpy()
    assert np.allclose(solver.configurations(data.y[:50], latents), expected, atol=1e-5)
    assert solver.solve(data.y[:3]).shape == (3, problem.dim)
    assert solver.meta['problem'] == 'planar3' and solver.meta['config']['blocks'] == 4


def test_loink_bench_hsa_reports_every_method_on_the_same_targets(tmp_path):
    """A CI-sized run: tiny LOInK and IKFlow models on a small HSA dataset, 4 targets."""
    from loink_ros.core.dataset import save_dataset
    from loink_ros.tools.bench import hsa as bench_hsa
    from loink_ros.tools.cli import main

    problem = make_problem('hsa')
    data = generate_dataset(problem, 3000, seed=5, progress=False)
    save_dataset(data, tmp_path / 'hsa.npz')
    main(['train', '--data', str(tmp_path / 'hsa.npz'), '--out', str(tmp_path / 'run'),
          '--blocks', '16', '--epochs', '2', '--export', str(tmp_path / 'hsa_model')])
    config = IkflowConfig(blocks=2, width=16, layers=1, epochs=1, batch_size=256)
    flow, norm, log = train_ikflow(data, config, progress=False)
    export_ikflow(flow, norm, config, log, 'hsa', tmp_path / 'ikflow')
    report = bench_hsa.run(str(tmp_path / 'hsa_model.json'), tmp_path / 'ikflow', count=4,
                           size_samples=256)
    assert report['targets'] == 4 and report['reference']['success'] == 1.0
    for name in ('loink_raw', 'loink_z0_clipped', 'loink_refined', 'ikflow_z0',
                 'ikflow_best_of_k'):
        figures = report[name]
        assert figures['inside_range'] and figures['time_ms']['min'] > 0
    # Exact answers cost no less than the optimum (inexact ones may: they miss the target).
    assert report['loink_refined']['ee_error_mm']['max'] <= 1e-6
    assert report['loink_refined']['cost_ratio_to_reference']['min'] >= 1.0 - 1e-6
    assert 0.0 <= report['loink_z0_outside_range'] <= 1.0
    assert len(report['per_target']['ikflow_z0']['ee_error_mm']) == 4
    raw_ee = report['per_target']['loink_raw']['ee_error_mm']
    assert report['loink_raw']['ee_error_mm']['p95'] == pytest.approx(np.percentile(raw_ee, 95))
    met = report['targets_met']
    assert met['raw_ee_mean_at_most_the_papers_0.44_mm'] == {
        'value': pytest.approx(np.mean(raw_ee)), 'met': bool(np.mean(raw_ee) <= 0.44)}
    ratio = report['ikflow_z0_over_loink_raw_time']['median']
    assert met['per_target_time_ratio_median_at_least_1.5'] == {'value': ratio, 'met': ratio >= 1.5}
    assert len(met) == 6 and all(isinstance(t['met'], bool) for t in met.values())
    spread = report['spread']
    assert spread['c'][0] == 0.0 and len(spread['loink_cost']) == len(spread['c'])
    assert all(np.isfinite(spread['ikflow_cost'])) and report['batched_per_target_ms']['loink'] > 0
    size = report['ikflow_published_size']
    assert size['config'] == {'blocks': 12, 'width': 1024, 'layers': 3}
    assert size['published_onnx_z0_ms'] > size['benched_onnx_z0_ms'] > 0
    assert size['published_train_seconds_per_2e6_epoch'] > 0
    table = report['table_markdown'].splitlines()
    assert len(table) == 8 and table[2].startswith('| LOInK') and 'IPOPT reference' in table[-1]
    (tmp_path / 'bench.json').write_text(json.dumps(report))
    main(['plot', 'hsa', str(tmp_path / 'bench.json'), '--out', str(tmp_path / 'figures')])
    for name in ('hsa_fig8_ee_error', 'hsa_fig9_effort_ratio', 'hsa_fig10_spread'):
        assert (tmp_path / 'figures' / f'{name}.png').stat().st_size > 10_000
