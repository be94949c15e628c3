/* The x1-x4 expressions of BENCHMARKS.md ("Every fused f32 kernel at sixteen lanes") as
 * hand-written C loops, the peer graphlift is held to: built with
 *   gcc -O3 -march=native -ffast-math -fopenmp-simd scripts/c_exprs.c -o target/c_exprs -lm
 * (`omp simd`: glibc's libmvec, the vector math library gcc calls, vectorizes the math
 * calls; without it the loops stay scalar, 20-70 ns per element), run as `target/c_exprs N`; prints the median
 * ns per element of 7 batches of at least 20 ms for each expression, one thread, N(0, 1)
 * inputs (Box-Muller from a fixed LCG). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define COLS 1024

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* softplus(x) * tanh(b[col]) + sqrt(|x|) */
static void x1(const float *x, const float *b, float *y, size_t n) {
    _Pragma("omp simd")
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        float sp = fmaxf(v, 0.0f) + log1pf(expf(-fabsf(v)));
        y[i] = sp * tanhf(b[i % COLS]) + sqrtf(fabsf(v));
    }
}

/* log(1 + x*x) * sigmoid(b[row]) - erf(x) * 0.5 */
static void x2(const float *x, const float *b, float *y, size_t n) {
    _Pragma("omp simd")
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        float s = 1.0f / (1.0f + expf(-b[i / COLS]));
        y[i] = logf(1.0f + v * v) * s - erff(v) * 0.5f;
    }
}

/* exp(-x*x) * cos(x) + pow(|x|, b[col]) */
static void x3(const float *x, const float *b, float *y, size_t n) {
    _Pragma("omp simd")
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = expf(-v * v) * cosf(v) + powf(fabsf(v), b[i % COLS]);
    }
}

/* x * tanh(softplus(x)) + b[col] */
static void x4(const float *x, const float *b, float *y, size_t n) {
    _Pragma("omp simd")
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        float sp = fmaxf(v, 0.0f) + log1pf(expf(-fabsf(v)));
        y[i] = v * tanhf(sp) + b[i % COLS];
    }
}

static int cmp(const void *a, const void *b) {
    double d = *(const double *)a - *(const double *)b;
    return (d > 0) - (d < 0);
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? strtoull(argv[1], 0, 10) : 16384;
    float *x = aligned_alloc(64, n * 4), *b = aligned_alloc(64, n * 4 + 4096);
    float *y = aligned_alloc(64, n * 4);
    unsigned long long s = 12345;
    for (size_t i = 0; i < n + 1024; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        double u1 = ((s >> 11) + 1.0) / 9007199254740993.0;
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        double u2 = (s >> 11) / 9007199254740992.0;
        float g = (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
        if (i < n) x[i] = g; else b[i - n] = g;
    }
    for (size_t i = 1024; i < n; i++) b[i] = b[i % 1024];
    void (*fs[4])(const float *, const float *, float *, size_t) = {x1, x2, x3, x4};
    for (int f = 0; f < 4; f++) {
        size_t calls = 0;
        double t0 = now();
        while (now() - t0 < 0.02 || calls < 3) { fs[f](x, b, y, n); calls++; }
        double batch[7];
        for (int k = 0; k < 7; k++) {
            double t = now();
            for (size_t c = 0; c < calls; c++) fs[f](x, b, y, n);
            batch[k] = (now() - t) / calls / n * 1e9;
        }
        qsort(batch, 7, sizeof batch[0], cmp);
        printf("x%d %zu ns_per_element=%.4f (check %g)\n", f + 1, n, batch[3], (double)y[n / 3]);
    }
    return 0;
}
