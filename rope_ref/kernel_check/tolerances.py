"""The tolerances identify measures with, each derived from a kernel's float type (docs/identify_internals.md)."""

STRUCTURE_RTOL = 2e-2                   # linearity and pair blocks, relative: loose enough for bfloat16 kernels
STATE_RTOL = 1e-6                       # two calls with the same input agree (fn depends on its inputs alone)
ZERO_RTOL = 1e-6                        # fn(0) is 0 (exactly, for a linear kernel in any float type)
#: Unit roundoff of the float types a kernel's angles may be computed in, finest first.
PRECISIONS = (("float64", 2.0**-53), ("float32", 2.0**-24), ("float16", 2.0**-11), ("bfloat16", 2.0**-8))
NOISE_ULPS = 8                          # rounding allows |error| <= NOISE_ULPS * u * (1 + |angle|)
FREQ_ULPS = 64                          # frequencies carry a few roundings: FREQ_ULPS * u relative
NAME_RTOL = 0.5                         # a method is named only when every frequency is known to this
SIGMAS = 6.0                            # agreement: within SIGMAS standard deviations of the noise
MAX_OFFSET = 2**24                      # |offset| searched (float32 represents every integer up to it)
OFFSET_SIGMA = 0.5 / SIGMAS             # the offset is an integer when SIGMAS deviations stay within 1/2
DYNAMIC_MIN_OFFSET = 1024               # a `default` kernel this far in is measured at a second length too
MAX_ROWS = 4096                         # default max_rows: the most rows fn is asked for
MAX_POSITION = 4096                     # default max_position: the largest position a multi-axis probe passes
MAX_AXES = 16                           # most position axes a multi-axis probe accepts
MAX_BYTES = 2**30                       # default max_bytes: the largest array identify holds
TIMEOUT = 300.0                         # default timeout: seconds identify waits for all calls of fn together
#: Training lengths of published models, tried when a scaling method's original length must be guessed.
TRAIN_LENGTHS = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
