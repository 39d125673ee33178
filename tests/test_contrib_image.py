"""`tf.contrib.image`'s projective transforms (RandAugment in google-research/noisystudent).

TF 1.x's contrib.image lives on as Keras' image preprocessing transform (same transform
layout and rotation formula): the rotation below is what Keras 2.15 (TF 2.15) computed.
"""
import numpy as np
import pytest
import tensorflow as tf

from tpu_estimator_compat import v1

IMAGE = np.arange(20, dtype=np.float32).reshape(5, 4)


def test_rotate_by_an_angle_as_tf1():
    image = v1.contrib.image
    transforms = image.angles_to_projective_transforms(0.4, 5, 4)
    np.testing.assert_allclose(transforms.numpy(), [[
        0.9210609793663025, -0.3894183337688446, 0.8972452282905579, 0.3894183337688446,
        0.9210609793663025, -0.42624950408935547, 0.0, 0.0]], rtol=1e-6)
    rotated = image.rotate(IMAGE, 0.4)  # [H, W] in, [H, W] out; NEAREST, zeros outside
    assert rotated.shape == (5, 4)
    np.testing.assert_array_equal(rotated.numpy().astype(int), [
        [1, 2, 3, 0], [1, 5, 6, 11], [4, 9, 10, 15], [8, 13, 14, 18], [0, 16, 17, 18]])


def test_rotate_a_quarter_turn_is_counterclockwise_for_every_rank():
    square = np.arange(16, dtype=np.uint8).reshape(4, 4)
    expected = np.rot90(square)
    for images, index in ((square, np.s_[:, :]), (square[..., None], np.s_[:, :, 0]),
                          (square[None, ..., None], np.s_[0, :, :, 0])):
        rotated = v1.contrib.image.rotate(images, np.pi / 2)
        assert rotated.shape == images.shape and rotated.dtype == tf.uint8
        np.testing.assert_array_equal(rotated.numpy()[index], expected)


def test_translate_and_composed_transforms():
    image = v1.contrib.image
    shifted = image.translate(IMAGE, [1, 0]).numpy()  # one column right, zeros enter
    np.testing.assert_array_equal(shifted[:, 0], 0)
    np.testing.assert_array_equal(shifted[:, 1:], IMAGE[:, :-1])
    down = image.translate(IMAGE[None, ..., None], [[0, 2]]).numpy()[0, :, :, 0]
    np.testing.assert_array_equal(down[2:], IMAGE[:-2])
    composed = image.compose_transforms(image.translations_to_projective_transforms([1, 0]),
                                        image.translations_to_projective_transforms([0, 2]))
    np.testing.assert_allclose(composed.numpy(), [[1, 0, -1, 0, 1, -2, 0, 0]])
    both = image.transform(IMAGE, composed).numpy()
    np.testing.assert_array_equal(both[2:, 1:], IMAGE[:-2, :-1])


def test_images_of_another_rank_are_refused_naming_the_shapes():
    with pytest.raises(ValueError, match=r"images must be \[height, width\], .* got shape"):
        v1.contrib.image.rotate(np.zeros([2, 2, 2, 2, 2], np.float32), 0.1)
    with pytest.raises(AttributeError, match="projective transforms"):
        v1.contrib.image.dense_image_warp  # noqa: B018
