"""Plain TensorFlow (no tpu_estimator_compat): the oneDNN bug behind uda_image's native crash.

    python tests/real_programs/onednn_1x1_crash.py [BATCH IN_CHANNELS]

The filter gradient of a 1x1 convolution with stride 2 on NHWC input with fewer input channels
than oneDNN's channel block (16 with AVX-512, 8 with AVX2) runs oneDNN's `jit_1x1`
backward-weights kernel, which writes past its strided-input workspace: glibc aborts
("double free or corruption", "malloc(): invalid size") or the process segfaults, often a few
kernels later. On an AVX-512 machine with TensorFlow 2.21 (oneDNN 3.7.3), batch 3 and 4 input
channels crash within 20 steps; 16 input channels, stride 1, or `TF_ENABLE_ONEDNN_OPTS=0` do
not. Reported upstream as uxlfoundation/oneDNN#6035. uda_image's tiny `--wrn_size=4` put 4 and
8 channels into its 1x1 stride-2 shortcut convolutions; its recipe uses 16.
"""
import sys

import numpy as np
import tensorflow as tf

batch, channels = (int(a) for a in sys.argv[1:3]) if len(sys.argv) > 2 else (3, 4)
rng = np.random.RandomState(0)
images = tf.constant(rng.rand(batch, 32, 32, channels).astype(np.float32))
kernel = tf.Variable(rng.rand(1, 1, channels, 8).astype(np.float32))


@tf.function
def filter_gradient():
    with tf.GradientTape() as tape:
        outputs = tf.nn.conv2d(images, kernel, strides=2, padding="SAME")
    return tape.gradient(outputs, kernel)


for _ in range(20):
    gradient = filter_gradient()
print("no crash; gradient sum", float(tf.reduce_sum(gradient)))
