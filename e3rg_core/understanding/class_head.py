"""A class-balanced multinomial logistic regression, fitted on sentence embeddings in a second or less.

The embedding voter fits one over its labelled prototype sentences when it is built (the sentences
ship with the package; the fit depends only on them and the embedding model, so it is reproducible
and follows any model the config names). Classes are weighted by their inverse frequency, so a class
written with fewer sentences (neutral has one label, happy has twelve) starts from an even prior.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from e3rg_core.errors import ConfigError


@dataclass(frozen=True)
class ClassHead:
    """Weights ``(n_classes, dim)`` and biases ``(n_classes,)`` of a fitted softmax regression."""

    weights: Any
    biases: Any

    def log_probs(self, vectors: Any) -> Any:
        """Log-probabilities ``(n, n_classes)`` for embeddings ``(n, dim)``."""
        import numpy as np

        logits = np.atleast_2d(vectors) @ self.weights.T + self.biases
        logits -= logits.max(axis=1, keepdims=True)
        return logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))


def fit_class_head(vectors: Any, classes: Any, n_classes: int, *, c: float = 1.0) -> ClassHead:
    """Fit weights minimising ``0.5 * |W|^2 + c * sum_i w_i * cross_entropy_i`` (``w_i`` balances classes).

    ``vectors`` is ``(n, dim)``, ``classes`` holds each row's class index in ``0..n_classes-1``;
    every class needs at least one row. The biases are not penalised.
    """
    import numpy as np
    from scipy.optimize import minimize

    x = np.asarray(vectors, dtype=np.float64)
    y = np.asarray(classes, dtype=np.int64)
    if c <= 0:
        raise ConfigError(f"the class head's regularisation c must be > 0, not {c}")
    counts = np.bincount(y, minlength=n_classes)
    if x.ndim != 2 or len(x) != len(y) or (counts == 0).any():
        raise ConfigError(f"the class head needs one row per label and every class present (counts {counts.tolist()})")
    n, dim = x.shape
    sample_weight = (n / (n_classes * counts))[y]
    onehot = np.zeros((n, n_classes))
    onehot[np.arange(n), y] = 1.0

    def loss(theta: Any) -> tuple[float, Any]:
        w = theta[: n_classes * dim].reshape(n_classes, dim)
        b = theta[n_classes * dim:]
        logits = x @ w.T + b
        logits -= logits.max(axis=1, keepdims=True)
        log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        value = 0.5 * float((w * w).sum()) - c * float((sample_weight[:, None] * onehot * log_p).sum())
        residual = c * sample_weight[:, None] * (np.exp(log_p) - onehot)
        grad = np.concatenate([(w + residual.T @ x).ravel(), residual.sum(axis=0)])
        return value, grad

    result = minimize(loss, np.zeros(n_classes * (dim + 1)), jac=True, method="L-BFGS-B",
                      options={"maxiter": 2000})
    theta = result.x
    return ClassHead(weights=theta[: n_classes * dim].reshape(n_classes, dim), biases=theta[n_classes * dim:])
