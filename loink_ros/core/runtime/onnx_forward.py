"""The exported forward map evaluated with ONNX Runtime."""

from pathlib import Path

import numpy as np
import onnxruntime as ort


class OnnxForward:
    """Joint units in; (task, latent, cost) out, as exported."""

    def __init__(self, path: Path, threads: int = 1):
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only: warnings would break one-line start-up output
        self.session = ort.InferenceSession(str(path), options, providers=['CPUExecutionProvider'])

    def __call__(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Batch (B, n) of configurations."""
        task, latent, cost = self.session.run(None, {'configuration': np.atleast_2d(q).astype(np.float64)})
        return task, latent, cost
