"""The tolerances identify measures with, each derived from what a kernel's float type can do."""

#: Relative tolerance for structure (linearity, pair blocks): loose enough for bfloat16 kernels.
STRUCTURE_RTOL = 2e-2
#: Two calls with the same input must agree to this relative tolerance (fn depends on x alone).
STATE_RTOL = 1e-6
#: fn(0) must be 0 to this relative tolerance (exactly 0 for a linear kernel in any float type).
ZERO_RTOL = 1e-6
#: Unit roundoff of the float types a kernel's angles may be computed in, finest first.
PRECISIONS = (("float64", 2.0**-53), ("float32", 2.0**-24), ("float16", 2.0**-11), ("bfloat16", 2.0**-8))
#: Angles "behave like" a float type when |error| <= NOISE_ULPS * u * (1 + |angle|).
NOISE_ULPS = 8
#: Frequencies computed in a float type carry a few roundings: allow FREQ_ULPS * u relative.
FREQ_ULPS = 64
#: A scaling method is named only when every frequency is known to this relative tolerance: Llama 3 and
#: YaRN change only the slow pairs, by their factor (4 to 40 in published models: 0.75 relative or more).
NAME_RTOL = 0.5
#: Measured quantities agree when within SIGMAS standard deviations of their noise.
SIGMAS = 6.0
#: Offsets searched: |offset| <= MAX_OFFSET (float32 represents every integer up to 2^24).
MAX_OFFSET = 2**24
#: The offset is resolved to an integer when SIGMAS standard deviations stay within half a position.
OFFSET_SIGMA = 0.5 / SIGMAS
#: A `default` kernel whose rows start this far in is measured at a second length too: dynamic NTK
#: leaves the frequencies at their default up to its training length (1024 or more in published models).
DYNAMIC_MIN_OFFSET = 1024
#: Default for max_rows: at most this many rows are requested from fn when refining the offset.
MAX_ROWS = 4096
#: Default for max_bytes: the largest array identify holds (seq x d x d, or max_rows x d, float64).
MAX_BYTES = 2**30
#: Training lengths of published models, tried when a scaling method's original length must be guessed.
TRAIN_LENGTHS = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
