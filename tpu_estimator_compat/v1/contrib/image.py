"""`tf.contrib.image`: its projective transforms (`transform`, `rotate`, `translate` and the
functions building and composing transforms, `rebuilt_apis/contrib_image.py`). contrib's
other image ops (warps, splines, connected components, bipartite matching...) are not
provided."""
from tpu_estimator_compat.v1 import _lazy

NAMES = ("transform", "rotate", "translate", "angles_to_projective_transforms",
         "translations_to_projective_transforms", "compose_transforms",
         "flat_transforms_to_matrices", "matrices_to_flat_transforms")

_lazy.install(
    globals(),
    names={name: f"tpu_estimator_compat.rebuilt_apis.contrib_image:{name}" for name in NAMES},
    missing_hint=(". tpu_estimator_compat provides tf.contrib.image's projective transforms "
                  f"({', '.join(NAMES)}) only."),
)
