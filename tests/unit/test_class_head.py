import numpy as np
import pytest

from e3rg_core.errors import ConfigError
from e3rg_core.understanding.class_head import fit_class_head


def clusters(sizes, dim=6, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.eye(dim)[: len(sizes)] * 3
    x = np.concatenate([centres[k] + rng.normal(0, 0.5, (n, dim)) for k, n in enumerate(sizes)])
    y = np.concatenate([np.full(n, k) for k, n in enumerate(sizes)])
    return centres, x, y


def test_the_head_separates_classes_and_gives_log_probabilities():
    centres, x, y = clusters([10, 10, 10])
    head = fit_class_head(x, y, 3, c=3.0)
    log_p = head.log_probs(centres)
    assert log_p.shape == (3, 3)
    assert list(log_p.argmax(axis=1)) == [0, 1, 2]
    assert np.allclose(np.exp(log_p).sum(axis=1), 1.0)


def test_a_class_written_with_few_sentences_is_not_drowned_by_a_large_one():
    # one class with 2 examples beside one with 60: balanced weights keep its centre its own
    centres, x, y = clusters([60, 2])
    head = fit_class_head(x, y, 2, c=1.0)
    assert head.log_probs(centres[1]).argmax() == 1
    midpoint = head.log_probs((centres[0] + centres[1]) / 2)[0]
    assert abs(midpoint[0] - midpoint[1]) < 1.0  # no strong lean towards the class written most


def test_bad_inputs_say_what_is_needed():
    _, x, y = clusters([5, 5])
    with pytest.raises(ConfigError, match="every class present"):
        fit_class_head(x, y, 3)
    with pytest.raises(ConfigError, match="must be > 0"):
        fit_class_head(x, y, 2, c=0)
