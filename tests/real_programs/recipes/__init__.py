"""One recipe per real program, grouped by area (one module each): where it lives, its tiny
data, and its tiny flags (`program.Program`)."""
from recipes import detection, generative, language, mobile, vision

PROGRAMS = (language.PROGRAMS + vision.PROGRAMS + detection.PROGRAMS + generative.PROGRAMS
            + mobile.PROGRAMS)


def by_name():
    return {p.name: p for p in PROGRAMS}
