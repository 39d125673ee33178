"""The `.meta` file of a training checkpoint: the TRAIN graph as TF1 saved it.

TF1's Saver wrote `model.ckpt-N.meta` beside each checkpoint: a MetaGraphDef of the model's
graph with its SaverDef and collections, read by `tf.compat.v1.train.import_meta_graph` and
copied with the checkpoint by tools that move checkpoints by their files. The engine runs no
TF1 graph, so one is built once per compiled training step, the way export builds its
graphs: model_fn is called in TRAIN mode in a fresh `tf.Graph` on placeholders shaped like
one replica's input, the train op goes in the TRAIN_OP collection (as Estimator put it), and
a sharded `Saver` over its global variables (TF1 names, as in the checkpoints) supplies the
SaverDef.

The GraphDef is the one `export_meta_graph(clear_devices=True)` writes (devices cleared,
`_output_shapes` added), built here in one pass: TensorFlow's own clear_devices path appends
node by node to a growing GraphDef and took time quadratic in the graph's size (11 s for
13,000 ops, the size of a small detection model's train graph; 0.2 s here).
"""
import collections.abc
import copy

import tensorflow as tf

from tpu_estimator_compat import log as logging
from tpu_estimator_compat.engine import model_bridge
from tpu_estimator_compat.api.spec import ModeKeys


def build_train_meta_graph(model_fn, config, traced):
    """The serialized MetaGraphDef of the TRAIN graph, or None (logged) if it cannot be built.

    Args:
      model_fn, config: the user's.
      traced: the `model_step.TracedSpec` of the training step (replica 0's input signature
        and params).
    """
    try:
        with tf.Graph().as_default() as graph:
            tf.compat.v1.train.get_or_create_global_step()
            features, labels = tf.nest.map_structure(
                lambda spec: None if spec is None else tf.compat.v1.placeholder(
                    spec.dtype, spec.shape),
                traced.input_signature)
            spec = model_bridge.call_model_fn(model_fn, features, labels, ModeKeys.TRAIN,
                                              _copy(traced.params), config)
            graph.add_to_collection(tf.compat.v1.GraphKeys.TRAIN_OP, spec.train_op)
            saver = tf.compat.v1.train.Saver(sharded=True)
            meta_graph = tf.compat.v1.train.export_meta_graph(
                graph_def=_device_free_graph_def(graph), graph=graph,
                saver_def=saver.saver_def)
    except Exception as error:  # pylint: disable=broad-except
        logging.warning("Checkpoints are written without a .meta graph file: building the "
                        "TRAIN graph in a TF1 graph failed (%s: %s).",
                        type(error).__name__, error)
        return None
    return meta_graph.SerializeToString()


def _copy(params):
    """A copy of the params model_fn got: a dict, or the plain Estimator's object as given."""
    params = params or {}
    return dict(params) if isinstance(params, collections.abc.Mapping) else copy.copy(params)


def _device_free_graph_def(graph):
    """`graph`'s GraphDef as `export_meta_graph(clear_devices=True)` makes it: each op's
    NodeDef without its device and with its outputs' `_output_shapes`, in creation order."""
    whole = graph.as_graph_def()
    graph_def = tf.compat.v1.GraphDef()
    graph_def.versions.CopyFrom(whole.versions)
    for op in graph.get_operations():
        node = graph_def.node.add()
        node.CopyFrom(op.node_def)
        node.device = ""
        if op.outputs:
            node.attr["_output_shapes"].list.shape.extend(
                [output.shape.as_proto() for output in op.outputs])
    graph_def.library.CopyFrom(whole.library)
    return graph_def
