"""engine/padding.py: the signals (mask, stop) that let EVAL and PREDICT run a finite input
to its end, on plain tf.data datasets (no strategy, no estimator)."""
import numpy as np
import pytest
import tensorflow as tf

from tpu_estimator_compat.engine import padding


def _batches(dataset):
    """[(element as numpy, mask, stop)] of a signalled dataset."""
    return [(tf.nest.map_structure(lambda t: t.numpy(), element), signals[padding.MASK].numpy(),
             signals[padding.STOP].numpy())
            for element, signals in dataset]


def _examples(count):
    """(features {'x': [count, 2]}, labels [count]) with distinct non-zero values."""
    x = np.arange(1, 2 * count + 1, dtype=np.float32).reshape(count, 2)
    return {"x": x}, np.arange(1, count + 1, dtype=np.int64) * 10


def test_tpu_padding_fills_the_partial_batch_and_masks_its_padding():
    features, labels = _examples(10)
    dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(4)
    signalled = padding.add_signals(dataset, 4, pad=True, stop_batches=2)

    (features_spec, labels_spec), _ = signalled.element_spec
    assert features_spec["x"].shape == [4, 2] and labels_spec.shape == [4]  # static now
    batches = _batches(signalled)
    assert len(batches) == 3 + 2
    rows = [4, 4, 2]
    for index, ((x, y), mask, stop) in enumerate(batches[:3]):
        real = slice(4 * index, 4 * index + rows[index])
        np.testing.assert_array_equal(x["x"][:rows[index]], features["x"][real])
        np.testing.assert_array_equal(y[:rows[index]], labels[real])
        assert not x["x"][rows[index]:].any() and not y[rows[index]:].any()  # zero rows
        assert mask.tolist() == [True] * rows[index] + [False] * (4 - rows[index])
        assert not stop.any()
    for (x, y), mask, stop in batches[3:]:  # stop batches: all padding
        assert x["x"].shape == (4, 2) and not x["x"].any() and not y.any()
        assert not mask.any() and stop.all()


def test_every_real_example_is_unmasked_exactly_once():
    features, labels = _examples(7)
    dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(3)
    kept = [y[mask] for (_, y), mask, _ in
            _batches(padding.add_signals(dataset, 3, pad=True, stop_batches=3))]
    np.testing.assert_array_equal(np.concatenate(kept), labels)


def test_fully_static_input_is_not_padded_whichever_dimension_is_the_batch():
    # Batch last, as resnet's transpose_input: [H, B] with drop_remainder=True.
    images = np.arange(1, 25, dtype=np.float32).reshape(8, 3)
    dataset = (tf.data.Dataset.from_tensor_slices(images).batch(4, drop_remainder=True)
               .map(tf.transpose))
    signalled = padding.add_signals(dataset, 4, pad=True, stop_batches=1)

    assert signalled.element_spec[0].shape == [3, 4]
    batches = _batches(signalled)
    assert len(batches) == 3
    np.testing.assert_array_equal(batches[0][0], images[:4].T)
    np.testing.assert_array_equal(batches[1][0], images[4:].T)
    assert [mask.tolist() for _, mask, _ in batches] == [[True] * 4, [True] * 4, [False] * 4]
    assert [stop.tolist() for _, _, stop in batches] == [[False] * 4, [False] * 4, [True] * 4]
    assert batches[2][0].shape == (3, 4) and not batches[2][0].any()


def test_without_padding_batches_keep_their_size_and_stop_batches_have_one_zero_row():
    features, labels = _examples(5)
    dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(2)
    batches = _batches(padding.add_signals(dataset, 2, pad=False, stop_batches=2))

    assert [len(mask) for _, mask, _ in batches] == [2, 2, 1, 1, 1]
    np.testing.assert_array_equal(np.concatenate([y for (_, y), _, _ in batches[:3]]), labels)
    assert all(mask.all() and not stop.any() for _, mask, stop in batches[:3])
    for (x, y), mask, stop in batches[3:]:
        assert x["x"].shape == (1, 2) and not x["x"].any() and y.tolist() == [0]
        assert mask.tolist() == [False] and stop.tolist() == [True]


@pytest.mark.parametrize("pad, stop_rows", [(False, 0), (True, 4)])
def test_an_input_with_no_example_yields_only_stop_batches(pad, stop_rows):
    dataset = tf.data.Dataset.from_tensor_slices(_examples(0)).batch(4)
    batches = _batches(padding.add_signals(dataset, 4, pad=pad, stop_batches=2))

    assert len(batches) == 2
    for (x, y), mask, stop in batches:
        assert x["x"].shape == (stop_rows, 2) and y.shape == (stop_rows,)
        assert not mask.any() and stop.tolist() == [True] * stop_rows


def test_stop_batches_are_endless_by_default():
    dataset = tf.data.Dataset.range(3).batch(2)
    batches = _batches(padding.add_signals(dataset, 2, pad=True).take(50))
    assert len(batches) == 50
    assert [bool(stop.all()) for _, _, stop in batches] == [False] * 2 + [True] * 48


def test_a_single_tensor_element_stays_a_tensor():
    dataset = tf.data.Dataset.range(3).batch(2)
    element_spec, signals_spec = padding.add_signals(dataset, 2, pad=True).element_spec
    assert isinstance(element_spec, tf.TensorSpec) and element_spec.shape == [2]
    assert set(signals_spec) == {padding.MASK, padding.STOP}


def test_a_batch_larger_than_the_batch_size_is_an_error_naming_the_batch_size():
    dataset = tf.data.Dataset.range(12).batch(6)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"input_fn returned a batch larger than "
                             r"params\[\\?'batch_size\\?'\] \(4\)"):  # TF escapes quotes
        _batches(padding.add_signals(dataset, 4, pad=True, stop_batches=1))


def test_unbatched_scalars_are_an_error_naming_the_fix():
    dataset = tf.data.Dataset.range(3)
    with pytest.raises(ValueError, match=r"input_fn returned a scalar .*batch the dataset "
                                         r"\(dataset.batch\(params\['batch_size'\]\)\)"):
        padding.add_signals(dataset, 4, pad=False, stop_batches=1)
