/* elecsurf's nearest-vertex tree (examples/elecsurf.c, vertex_tree) against
   a search of every vertex: the same vertex (the lowest index of those at
   the least distance) and the same squared distance, bit for bit, for
   queries among the vertices, on them, and far outside them (where the
   cell list it replaced searched the whole region), on random clouds, a
   sphere's points, and sets that defeat a careless split: every vertex
   the same, on one line with repeats, a grid of equal coordinates, one
   vertex, one past a leaf. */
#define ELECSURF_NO_MAIN
#include "examples/elecsurf.c"

#include "tests/test.h"

/* The lowest-index nearest vertex by looking at each. */
static double brute_nearest(const double *xyz, size_t count, const double x[3],
                            size_t *nearest) {
    double best = HUGE_VAL;
    size_t v;
    *nearest = 0;
    for (v = 0; v < count; v++) {
        const double *c = xyz + 3 * v;
        const double d2 = (x[0] - c[0]) * (x[0] - c[0]) + (x[1] - c[1]) * (x[1] - c[1]) +
                          (x[2] - c[2]) * (x[2] - c[2]);
        if (d2 < best) {
            best = d2;
            *nearest = v;
        }
    }
    return best;
}

static double uniform(unsigned *state, double lo, double hi) {
    *state = *state * 1664525u + 1013904223u;
    return lo + (hi - lo) * (double)(*state >> 8) / 16777216.0;
}

/* Queries: each vertex, points among the vertices' span, and points up to
   `far` A beyond it; every answer the brute search's.  Returns the
   mismatches. */
static int tree_agrees(const char *name, const double *xyz, size_t count, double span,
                       double far, unsigned seed) {
    elec_surface surf;
    vertex_tree tree;
    int wrong = 0, q;
    size_t v;
    memset(&surf, 0, sizeof surf);
    surf.xyz = (double *)xyz;
    surf.count = count;
    if (!vertex_tree_build(&surf, &tree)) {
        printf("     %s: no memory for the tree\n", name);
        return 1;
    }
    for (q = 0; q < (int)count + 4000; q++) {
        double x[3], got, want;
        size_t got_v, want_v;
        int axis;
        if (q < (int)count) memcpy(x, xyz + 3 * q, sizeof x);
        else
            for (axis = 0; axis < 3; axis++)
                x[axis] = q % 2 ? uniform(&seed, -span, span)
                                : uniform(&seed, -span - far, span + far);
        got = nearest_vertex(&tree, x, &got_v);
        want = brute_nearest(xyz, count, x, &want_v);
        if (got != want || got_v != want_v) {
            if (wrong < 3)
                printf("     %s: query (%g, %g, %g): vertex %zu at %.17g, want %zu at %.17g\n",
                       name, x[0], x[1], x[2], got_v, got, want_v, want);
            wrong++;
        }
    }
    /* the tree keeps every vertex once */
    for (v = 0; v < count; v++) {
        size_t w, seen = 0;
        for (w = 0; w < count; w++) seen += tree.order[w] == v;
        if (seen != 1) {
            printf("     %s: vertex %zu held %zu times\n", name, v, seen);
            wrong++;
            break;
        }
    }
    vertex_tree_free(&tree);
    return wrong;
}

TEST(nearest_vertex_is_the_brute_searchs_on_clouds_and_spheres) {
    enum { CLOUD = 3000, SPHERE = 2000 };
    double *cloud = (double *)malloc(3 * CLOUD * sizeof *cloud);
    double *sphere = (double *)malloc(3 * SPHERE * sizeof *sphere);
    unsigned seed = 11u;
    size_t v;
    for (v = 0; v < 3 * CLOUD; v++) cloud[v] = uniform(&seed, -20.0, 20.0);
    /* a sphere of radius 14 by a golden-angle spiral: points a query far
       away sees at nearly one distance */
    for (v = 0; v < SPHERE; v++) {
        const double z = 1.0 - (2.0 * (double)v + 1.0) / SPHERE, r = sqrt(1.0 - z * z);
        const double phi = 2.399963229728653 * (double)v;
        sphere[3 * v] = 14.0 * r * cos(phi);
        sphere[3 * v + 1] = 14.0 * r * sin(phi);
        sphere[3 * v + 2] = 14.0 * z;
    }
    EXPECT(tree_agrees("cloud", cloud, CLOUD, 20.0, 500.0, 3u) == 0, "the cloud");
    EXPECT(tree_agrees("sphere", sphere, SPHERE, 14.0, 160.0, 5u) == 0, "the sphere");
    free(cloud);
    free(sphere);
}

TEST(nearest_vertex_is_the_brute_searchs_on_degenerate_sets) {
    enum { SAME = 50, LINE = 120, GRID = 400 };
    double same[3 * SAME], line[3 * LINE], grid[3 * GRID];
    const double one[3] = {1.5, -2.0, 0.25};
    double nine[27];
    unsigned seed = 7u;
    size_t v;
    for (v = 0; v < SAME; v++) {
        same[3 * v] = 3.0;
        same[3 * v + 1] = -1.0;
        same[3 * v + 2] = 2.0;
    }
    for (v = 0; v < LINE; v++) { /* x in 0..39, each three times */
        line[3 * v] = (double)(v % 40);
        line[3 * v + 1] = line[3 * v + 2] = 0.0;
    }
    for (v = 0; v < GRID; v++) { /* a 20 x 20 plane grid at z = 5 */
        grid[3 * v] = (double)(v % 20);
        grid[3 * v + 1] = (double)(v / 20);
        grid[3 * v + 2] = 5.0;
    }
    for (v = 0; v < 27; v++) nine[v] = uniform(&seed, -3.0, 3.0);
    EXPECT(tree_agrees("one point, 50 times", same, SAME, 5.0, 100.0, 13u) == 0, "same");
    EXPECT(tree_agrees("a line with repeats", line, LINE, 40.0, 100.0, 17u) == 0, "line");
    EXPECT(tree_agrees("a plane grid", grid, GRID, 20.0, 100.0, 19u) == 0, "grid");
    EXPECT(tree_agrees("one vertex", one, 1, 5.0, 100.0, 23u) == 0, "one");
    EXPECT(tree_agrees("nine vertices", nine, 9, 3.0, 100.0, 29u) == 0, "nine");
}

int main(void) {
    (void)elecsurf_parse; /* the tool's, unused here */
    (void)elecsurf_run;
    RUN(nearest_vertex_is_the_brute_searchs_on_clouds_and_spheres);
    RUN(nearest_vertex_is_the_brute_searchs_on_degenerate_sets);
    return test_summary();
}
