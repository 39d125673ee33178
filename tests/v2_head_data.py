"""The examples and labels of the v2-style head scenarios: tests/test_estimator_v2_heads.py
runs them here, tests/data/make_v2_heads_reference.py under TF 2.15 (numpy only, so both can
import it)."""
import numpy as np

X = np.array([[0.5, -1.0, 2.0], [1.5, 0.3, -0.7], [-0.2, 0.8, 0.1], [1.0, 1.0, 1.0],
              [-1.3, 0.4, 0.9], [0.7, -0.6, -1.1]], np.float32)
W = np.array([1.0, 2.0, 0.5, 1.0, 3.0, 1.5], np.float32)
LABELS = {
    "binary": np.array([[1], [0], [1], [1], [0], [0]], np.float32),
    "multi_class": np.array([[2], [0], [1], [2], [1], [0]], np.int64),
    "multi_label": np.array([[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 1], [1, 0, 0],
                             [0, 1, 1]], np.int64),
    "regression": np.array([[1.0, -2.0], [0.5, 0.3], [-1.0, 2.0], [0.2, 0.2], [3.0, 1.0],
                            [0.0, -0.5]], np.float32),
    "poisson": np.array([[1.0], [0.0], [3.0], [2.0], [0.0], [1.0]], np.float32),
    "logistic": np.array([[0.9], [0.1], [0.5], [1.0], [0.0], [0.3]], np.float32),
    "vocabulary": np.array([["c"], ["a"], ["b"], ["c"], ["b"], ["a"]]),
}
