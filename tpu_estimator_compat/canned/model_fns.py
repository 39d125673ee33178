"""The model_fn a canned estimator hands to `Estimator`: its estimator's model_fn with the
head and the constructor's options bound, taking `config` as TF1's canned estimators did.
`checked_head` vets the head a `*Estimator` class is given."""


def checked_head(head):
    """`head` if it is a TF 1.x head (`logits_dimension`, `create_estimator_spec`), else a
    TypeError naming the head factories that make one."""
    if not all(hasattr(head, name) for name in ("logits_dimension", "create_estimator_spec")):
        raise TypeError(
            f"head must be a TF 1.x head (`_Head`), such as "
            "tf.contrib.estimator.multi_label_head(n_classes), multi_class_head(n_classes), "
            "binary_classification_head() or regression_head(label_dimension=...). Given "
            f"type: {type(head)}.")
    return head


def bind(model_fn, head, **options):
    """`(features, labels, mode, config) -> spec`: `model_fn(features, labels, mode, head,
    config=config, **options)`."""

    def _model_fn(features, labels, mode, config):
        return model_fn(features, labels, mode, head, config=config, **options)

    return _model_fn
