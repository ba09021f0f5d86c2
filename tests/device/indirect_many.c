/* indirect_many.c - 400 'declare target indirect' functions, each called through a
 * host function pointer inside target regions, every result checked.
 *
 * With a GCC 16 image the plugin must hand the device a complete hash table of the
 * (host address, device address) pairs through __gomp_indirect_addr_hmap. 400 keys in
 * a table of 509 or 1021 slots collide, so a builder that overwrites colliding entries
 * (the stock plugin's host-side htab_eq compares an entry with itself) loses
 * functions: the device then calls a host address (a launch error, exit != 0) or gets
 * a wrong result. The program prints how many functions such a builder loses with this
 * run's addresses (it varies with the load address).
 *
 * The first target region is a many-team one, so a device that builds its table in
 * block 0 at kernel start (the old linear __gomp_indirect_addr_map) races the other
 * blocks' lookups (GCC PR 114445/119857). Later regions repeat the calls.
 *
 * Built by tests/device/build.sh, run on the GPU by tests/device/run.sh. Without a GPU
 * libgomp runs the regions on the host and the test passes trivially. Prints
 * "OK ..." or "FAIL ..." (exit 1). */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define N 400
#define ROUNDS 3

/* f100 ... f499: distinct results, and bodies of irregular sizes (stores the
   compiler must keep) so that the addresses, and so the hashes, are not evenly spaced;
   evenly spaced ones hardly collide.  */
#define F(n) \
  int f##n (int x) \
  { \
    for (int k = 0; k < (n) * 37 % 23; k++) \
      sink = k; \
    return (n) * 7919 + x; \
  }
#define D10(d) F(d##0) F(d##1) F(d##2) F(d##3) F(d##4) \
	       F(d##5) F(d##6) F(d##7) F(d##8) F(d##9)
#define D100(h) D10(h##0) D10(h##1) D10(h##2) D10(h##3) D10(h##4) \
		D10(h##5) D10(h##6) D10(h##7) D10(h##8) D10(h##9)

#pragma omp begin declare target
static volatile int sink;
#pragma omp end declare target

#pragma omp begin declare target indirect
D100(1) D100(2) D100(3) D100(4)
#pragma omp end declare target

#undef F
#define F(n) f##n,
static int (*const all[N]) (int) = { D100(1) D100(2) D100(3) D100(4) };

/* About how many of the N host addresses a hashtab.h-style build whose equality test
   is always true would lose: each insertion that finds its first slot occupied
   overwrites it (hashtab.h's growth rule and probing for the rest). An estimate: the
   insertion order here is the array's, not necessarily the image's.  */
static const unsigned primes[] = { 7, 13, 31, 61, 127, 251, 509, 1021, 2039, 4093 };

static unsigned hash_ptr (uintptr_t p) { return (unsigned) (p ^ (p >> 32)); }

static unsigned prime_at_least (size_t n)
{
  for (unsigned i = 0; i < sizeof primes / sizeof primes[0]; i++)
    if (primes[i] >= n)
      return primes[i];
  return 0;
}

static size_t probe_empty (uintptr_t *t, unsigned size, uintptr_t key)
{
  unsigned h = hash_ptr (key), i = h % size, step = 1 + h % (size - 2);
  while (t[i])
    if ((i += step) >= size)
      i -= size;
  return i;
}

static int stock_losses (void)
{
  unsigned size = prime_at_least (N);
  size_t used = 0;
  uintptr_t *t = calloc (size, sizeof *t);
  for (int k = 0; k < N; k++)
    {
      uintptr_t key = (uintptr_t) all[k];
      if (size * 3 <= used * 4)
	{
	  unsigned nsize = prime_at_least (used * 2);
	  uintptr_t *n = calloc (nsize, sizeof *n);
	  for (unsigned i = 0; i < size; i++)
	    if (t[i])
	      n[probe_empty (n, nsize, t[i])] = t[i];
	  free (t);
	  t = n;
	  size = nsize;
	}
      unsigned i = hash_ptr (key) % size;
      if (!t[i])
	used++;
      t[i] = key;
    }
  free (t);
  return N - (int) used;
}

int main (void)
{
  static int (*fns[N]) (int);
  static int out[N];
  int on_dev = 0, bad = 0;
  for (int i = 0; i < N; i++)
    fns[i] = all[i];

  for (int round = 0; round < ROUNDS; round++)
    {
      for (int i = 0; i < N; i++)
	out[i] = -1;
      if (round == 0)
	{
	  /* First launch: many teams at once.  */
#pragma omp target teams distribute parallel for num_teams(64) \
	    map(to: fns) map(from: out)
	  for (int i = 0; i < N; i++)
	    out[i] = fns[i] (i);
	}
      else
	{
	  /* One thread calls all of them in a row.  */
#pragma omp target map(to: fns) map(from: out, on_dev)
	  {
	    on_dev = !omp_is_initial_device ();
	    for (int i = 0; i < N; i++)
	      out[i] = fns[i] (i + round);
	  }
	}
      for (int i = 0; i < N; i++)
	{
	  int want = all[i] (round == 0 ? i : i + round);
	  if (out[i] != want)
	    {
	      if (bad < 5)
		printf ("round %d: f%d(...) gave %d, want %d\n", round, i + 100,
			out[i], want);
	      bad++;
	    }
	}
    }
  printf ("an always-equal builder would lose %d of %d functions here\n",
	  stock_losses (), N);
  if (bad)
    {
      printf ("FAIL %d wrong results of %d calls (%s)\n", bad, N * ROUNDS,
	      on_dev ? "on the device" : "host fallback");
      return 1;
    }
  printf ("OK %d indirect calls to %d functions right (%s)\n", N * ROUNDS, N,
	  on_dev ? "on the device" : "host fallback");
  return 0;
}
