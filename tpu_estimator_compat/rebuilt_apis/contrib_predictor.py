"""`tf.contrib.predictor`: callable predictors over a SavedModel's signature, as TF 1.15's.

A predictor holds a TF1 `Session` on a graph with the SavedModel loaded; calling it with a
dict of input name -> numpy value runs the signature's outputs (a dict of numpy values).
`from_estimator` exports the estimator's latest checkpoint (`export_saved_model` with the
serving input receiver) to a temporary directory and loads that export: the same signature
(inputs the receiver's tensors, outputs the `output_key` export output's) and values that
TF 1.15 built by calling model_fn in a fresh graph and restoring the checkpoint.
`from_contrib_estimator` needs `tf.contrib.learn.Estimator`, which is not provided.
"""
import tempfile

import tensorflow as tf

from tpu_estimator_compat import log as logging

DEFAULT_TAGS = "serve"
_DEFAULT_INPUT_ALTERNATIVE_FORMAT = "default_input_alternative:{}"
_DEFAULT_KEY = tf.compat.v1.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY


class Predictor:
    """Runs `fetch_tensors` of `graph` in `session`, feeding `feed_tensors` by key."""

    def __init__(self, graph, session, feed_tensors, fetch_tensors):
        self._graph = graph
        self._session = session
        self._feed_tensors = feed_tensors
        self._fetch_tensors = fetch_tensors

    @property
    def graph(self):
        return self._graph

    @property
    def session(self):
        return self._session

    @property
    def feed_tensors(self):
        return self._feed_tensors

    @property
    def fetch_tensors(self):
        return self._fetch_tensors

    def __repr__(self):
        return (f"{type(self).__name__} with feed tensors {self._feed_tensors} and "
                f"fetch_tensors {self._fetch_tensors}")

    def __call__(self, input_dict):
        """Returns `{output key: numpy value}` for `input_dict` (input key -> numpy value;
        keys the predictor does not feed are an error, missing ones are not fed)."""
        unexpected_keys = set(input_dict) - set(self._feed_tensors)
        if unexpected_keys:
            raise ValueError(f"Got unexpected keys in input_dict: {unexpected_keys}")
        feed_dict = {tensor: input_dict[key] for key, tensor in self._feed_tensors.items()
                     if input_dict.get(key) is not None}
        return self._session.run(fetches=self._fetch_tensors, feed_dict=feed_dict)


class SavedModelPredictor(Predictor):
    """A `Predictor` of a SavedModel's signature (or of named tensors of its graph)."""

    def __init__(self, export_dir, signature_def_key=None, signature_def=None,
                 input_names=None, output_names=None, tags=None, graph=None, config=None):
        _check_signature_arguments(signature_def_key, signature_def, input_names,
                                   output_names)
        tags = tags or DEFAULT_TAGS
        graph = graph or tf.Graph()
        with graph.as_default():
            session = tf.compat.v1.Session(config=config)
            meta_graph_def = tf.compat.v1.saved_model.loader.load(
                session, tags.split(","), export_dir)
        if input_names is None:
            if signature_def is None:
                signature_def = _signature_def(meta_graph_def, signature_def_key)
            input_names = {k: v.name for k, v in signature_def.inputs.items()}
            output_names = {k: v.name for k, v in signature_def.outputs.items()}
        super().__init__(graph, session,
                         {k: graph.get_tensor_by_name(v) for k, v in input_names.items()},
                         {k: graph.get_tensor_by_name(v) for k, v in output_names.items()})


class CoreEstimatorPredictor(Predictor):
    """A `Predictor` of an `Estimator` (`from_estimator`)."""


def _check_signature_arguments(signature_def_key, signature_def, input_names, output_names):
    if (input_names is None) != (output_names is None):
        raise ValueError("input_names and output_names must both be specified or both be "
                         "unspecified.")
    specified = sum(value is not None for value in (signature_def_key, signature_def,
                                                    input_names))
    if specified > 1:
        raise ValueError("You must specify at most one of signature_def_key OR signature_def "
                         "OR(input_names AND output_names).")


def _signature_def(meta_graph_def, signature_def_key):
    key = signature_def_key or _DEFAULT_KEY
    signatures = meta_graph_def.signature_def
    if key in signatures:
        return signatures[key]
    alternative = _DEFAULT_INPUT_ALTERNATIVE_FORMAT.format(key)
    if alternative not in signatures:
        raise ValueError(f'Got signature_def_key "{key}". Available signatures are '
                         f"{list(signatures)}. Original error:\n{KeyError(key)}")
    logging.warning('Could not find signature def "%s". Using "%s" instead', key, alternative)
    return signatures[alternative]


def from_saved_model(export_dir, signature_def_key=None, signature_def=None, input_names=None,
                     output_names=None, tags=None, graph=None, config=None):
    """A `Predictor` of the SavedModel in `export_dir`: its `signature_def_key` signature
    (default 'serving_default'), a given `signature_def`, or the tensors named by
    `input_names`/`output_names` (dicts of key -> tensor name); `tags` comma-separated
    (default 'serve'); `config` the session's ConfigProto."""
    return SavedModelPredictor(export_dir, signature_def_key=signature_def_key,
                               signature_def=signature_def, input_names=input_names,
                               output_names=output_names, tags=tags, graph=graph,
                               config=config)


def from_estimator(estimator, serving_input_receiver_fn, output_key=None, graph=None,
                   config=None):
    """A `Predictor` of an `Estimator`'s latest checkpoint: inputs the receiver tensors of
    `serving_input_receiver_fn`, outputs those of the model_fn's `output_key` export output
    (default 'serving_default')."""
    if not hasattr(estimator, "export_saved_model"):
        raise TypeError("Espected estimator to be of type tf.python.estimator.Estimator, but "
                        f"got type {type(estimator).__name__}.")
    output_key = output_key or _DEFAULT_KEY
    with tempfile.TemporaryDirectory() as export_base:
        export_dir = estimator.export_saved_model(export_base, serving_input_receiver_fn)
        graph = graph or tf.Graph()
        with graph.as_default():
            session = tf.compat.v1.Session(config=config)
            meta_graph_def = tf.compat.v1.saved_model.loader.load(
                session, [DEFAULT_TAGS], export_dir)
    signatures = meta_graph_def.signature_def
    if output_key not in signatures:
        raise KeyError(f"output_key must be one of dict_keys({list(signatures)}); got "
                       f"{output_key}")
    signature_def = signatures[output_key]
    return CoreEstimatorPredictor(
        graph, session,
        {k: graph.get_tensor_by_name(v.name) for k, v in signature_def.inputs.items()},
        {k: graph.get_tensor_by_name(v.name) for k, v in signature_def.outputs.items()})


def from_contrib_estimator(estimator, prediction_input_fn, input_alternative_key=None,
                           output_alternative_key=None, graph=None, config=None):
    """TF 1.15's predictor of a `tf.contrib.learn.Estimator`, which is not provided."""
    del prediction_input_fn, input_alternative_key, output_alternative_key, graph, config
    if hasattr(estimator, "export_saved_model"):
        raise TypeError("Espected estimator to be of type tf.contrib.learn.Estimator, but got "
                        "type tf.python.estimator.Estimator. You likely want to call "
                        "from_estimator.")
    raise TypeError("tf.contrib.predictor.from_contrib_estimator needs a "
                    "tf.contrib.learn.Estimator, which tpu_estimator_compat does not provide "
                    "(tf.contrib.learn was superseded by tf.estimator). Build a tf.estimator "
                    "Estimator and call tf.contrib.predictor.from_estimator, or export a "
                    "SavedModel and call from_saved_model.")
