// The seeded PRNG moved to @lameduck/test-utils; the fuzz tests keep importing it from here.
export * from '@lameduck/test-utils/prng'
