"""The comparison helpers must be able to fail: each kind of mismatch the differential tests rely on is caught."""
import numpy as np
import pytest

from helpers import assert_same, check_no_sharing, check_raises_like, public_type

pytestmark = pytest.mark.nocompile   # the compile-free tier (tests/conftest.py)


@pytest.mark.parametrize("actual,expected", [
    (np.array([1.0], np.float32), np.array([1.0], np.float64)),          # dtype
    (np.array([1, 2]), np.array([[1, 2]])),                               # shape
    (np.array(1.0), np.float32(1.0)),                                     # 0-d dtype
    (np.array([1, 2]), np.array([1, 3])),                                 # int value
    (np.array([True]), np.array([False])),                                # bool value
    (np.array([1.0, np.nan]), np.array([1.0, 2.0])),                      # NaN where NumPy has a number
    (np.array([1.0, 2.0]), np.array([1.0, np.nan])),                      # a number where NumPy has NaN
    (np.array([np.inf]), np.array([-np.inf])),                            # infinities
    (np.array([np.inf]), np.array([1e308])),
    (np.array([1.0001], np.float32), np.array([1.0], np.float32)),        # beyond float32 rtol
    (np.array([1.0 + 1e-9]), np.array([1.0])),                            # beyond float64 rtol
    (1.0, np.array(1.0)),                                                 # not an ndarray
    ((np.array(1),), [np.array(1)]),                                      # container type
    ((np.array(1),), (np.array(1), np.array(2))),                         # container length
    ({"a": np.array(1)}, {"b": np.array(1)}),                             # dict keys
    (None, np.array(1)),
])
def test_assert_same_catches(actual, expected):
    with pytest.raises(AssertionError):
        assert_same(actual, expected)


def test_assert_same_accepts_and_checks_signed_zeros():
    assert_same(np.array([1.0, np.nan, np.inf, -0.0]), np.array([1.0, np.nan, np.inf, 0.0]))
    assert_same(np.array(2.5, np.float32), np.float32(2.5))
    assert_same([np.array(1), {"k": (np.array(True),)}], [np.int64(1), {"k": (np.True_,)}])
    with pytest.raises(AssertionError):
        assert_same(np.array([-0.0]), np.array([0.0]), signed_zeros=True)


def test_check_no_sharing_catches_views():
    x = np.zeros(4)
    with pytest.raises(AssertionError):
        check_no_sharing((x[::2],), (x,))
    y = np.zeros(3)
    with pytest.raises(AssertionError):
        check_no_sharing((y, y[1:]), ())
    check_no_sharing((x.copy(), y.copy()), (x, y))


def test_check_raises_like_needs_numpy_to_raise(backend):
    with pytest.raises(AssertionError, match="NumPy does not raise"):
        check_raises_like(lambda x: x + 1, np.zeros(2), backend=backend)


def test_public_type_of_numpy_private_exceptions():
    try:
        np.add(np.array(["a"]), np.array([1.0]))
    except Exception as e:   # noqa: BLE001
        assert public_type(e) is TypeError
