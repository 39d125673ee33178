"""The model_fn a canned estimator hands to `Estimator`: its estimator's model_fn with the
head and the constructor's options bound, taking `config` as TF1's canned estimators did."""


def bind(model_fn, head, **options):
    """`(features, labels, mode, config) -> spec`: `model_fn(features, labels, mode, head,
    config=config, **options)`."""

    def _model_fn(features, labels, mode, config):
        return model_fn(features, labels, mode, head, config=config, **options)

    return _model_fn
