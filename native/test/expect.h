/* The preload library's tests' one assertion: counts checks and failures, prints each failure, and
 * the tests end with "N checks, N failed" as test/unit.c does. Called from main()'s thread only. */
#ifndef ERDMA_SMCR_TEST_EXPECT_H
#define ERDMA_SMCR_TEST_EXPECT_H
#include <stdio.h>

static int checks, failed;

static void expect(int ok, const char *what)
{
	checks++;
	if (!ok) {
		failed++;
		printf("FAIL: %s\n", what);
	}
}
#endif
