"""`tf.contrib.image`'s projective transforms, which TensorFlow 2 dropped with contrib (TF 1.x
behaviour: NEAREST interpolation by default, zeros where an output pixel maps outside the
image), run by TensorFlow's `ImageProjectiveTransformV3` kernel.

A transform is 8 numbers `[a0, a1, a2, b0, b1, b2, c0, c1]` (or a batch of them, one per
image) mapping each output pixel `(x, y)` to the input pixel `((a0 x + a1 y + a2) / k,
(b0 x + b1 y + b2) / k)`, `k = c0 x + c1 y + 1`. Images are `[H, W]`, `[H, W, C]` or
`[N, H, W, C]`; the result has the same rank.
"""
import tensorflow as tf


def _batched(images):
    """(images as [N, H, W, C], a function giving a result the input's rank back)."""
    images = tf.convert_to_tensor(images, name="images")
    rank = images.shape.rank
    if rank == 2:
        return images[None, :, :, None], lambda out: out[0, :, :, 0]
    if rank == 3:
        return images[None], lambda out: out[0]
    if rank == 4:
        return images, lambda out: out
    raise ValueError(f"images must be [height, width], [height, width, channels] or "
                     f"[batch, height, width, channels]; got shape {images.shape}.")


def _transform_batch(transforms):
    transforms = tf.convert_to_tensor(transforms, tf.float32, name="transforms")
    if transforms.shape.rank == 1:
        return transforms[None]
    if transforms.shape.rank == 2:
        return transforms
    raise ValueError(f"transforms must be [8] or [batch, 8]; got shape {transforms.shape}.")


def transform(images, transforms, interpolation="NEAREST", output_shape=None, name=None):
    """Applies projective `transforms` (see the module docstring) to `images`."""
    with tf.name_scope(name or "transform"):
        batch, restore = _batched(images)
        if output_shape is None:
            output_shape = tf.shape(batch)[1:3]
        output_shape = tf.convert_to_tensor(output_shape, tf.int32, name="output_shape")
        out = tf.raw_ops.ImageProjectiveTransformV3(
            images=batch, transforms=_transform_batch(transforms), output_shape=output_shape,
            fill_value=tf.constant(0.0), interpolation=interpolation.upper(),
            fill_mode="CONSTANT")
        return restore(out)


def angles_to_projective_transforms(angles, image_height, image_width, name=None):
    """Transforms rotating images counterclockwise by `angles` (radians) about their centre:
    [N, 8] for N angles (a scalar angle gives [1, 8])."""
    with tf.name_scope(name or "angles_to_projective_transforms"):
        angles = tf.reshape(tf.convert_to_tensor(angles, tf.float32, name="angles"), [-1])
        height = tf.cast(image_height, tf.float32) - 1.0
        width = tf.cast(image_width, tf.float32) - 1.0
        cos, sin = tf.cos(angles), tf.sin(angles)
        x_offset = (width - (cos * width - sin * height)) / 2.0
        y_offset = (height - (sin * width + cos * height)) / 2.0
        zeros = tf.zeros_like(angles)
        return tf.stack([cos, -sin, x_offset, sin, cos, y_offset, zeros, zeros], axis=1)


def rotate(images, angles, interpolation="NEAREST", name=None):
    """Rotates `images` counterclockwise by `angles` radians (a scalar, or one per image)."""
    with tf.name_scope(name or "rotate"):
        batch, restore = _batched(images)
        shape = tf.shape(batch)
        transforms = angles_to_projective_transforms(angles, shape[1], shape[2])
        return restore(transform(batch, transforms, interpolation=interpolation))


def translations_to_projective_transforms(translations, name=None):
    """Transforms shifting images by `translations` `[dx, dy]` (or [N, 2]): [N, 8]."""
    with tf.name_scope(name or "translations_to_projective_transforms"):
        translations = tf.reshape(
            tf.convert_to_tensor(translations, tf.float32, name="translations"), [-1, 2])
        ones, zeros = tf.ones_like(translations[:, 0]), tf.zeros_like(translations[:, 0])
        return tf.stack([ones, zeros, -translations[:, 0], zeros, ones, -translations[:, 1],
                         zeros, zeros], axis=1)


def translate(images, translations, interpolation="NEAREST", name=None):
    """Shifts `images` by `translations` pixels, `[dx, dy]` (or one pair per image)."""
    with tf.name_scope(name or "translate"):
        return transform(images, translations_to_projective_transforms(translations),
                         interpolation=interpolation)


def flat_transforms_to_matrices(transforms):
    """[N, 8] transforms as [N, 3, 3] matrices."""
    transforms = _transform_batch(transforms)
    ones = tf.ones_like(transforms[:, :1])
    return tf.reshape(tf.concat([transforms, ones], axis=1), [-1, 3, 3])


def matrices_to_flat_transforms(transform_matrices):
    """[N, 3, 3] matrices as [N, 8] transforms (normalised so that the last entry is 1)."""
    matrices = tf.convert_to_tensor(transform_matrices, tf.float32, name="transform_matrices")
    if matrices.shape.rank not in (2, 3):
        raise ValueError(f"transform_matrices must be [3, 3] or [batch, 3, 3]; got shape "
                         f"{matrices.shape}.")
    flat = tf.reshape(matrices, [-1, 9])
    return flat[:, :8] / flat[:, 8:]


def compose_transforms(*transforms):
    """One transform equivalent to `transforms` (each [8] or [N, 8]): their matrices'
    product, in the order given."""
    if not transforms:
        raise ValueError("compose_transforms needs at least one transform.")
    composed = flat_transforms_to_matrices(transforms[0])
    for following in transforms[1:]:
        composed = tf.matmul(composed, flat_transforms_to_matrices(following))
    return matrices_to_flat_transforms(composed)
