! kernel_bench.f90 - the STREAM triad and dot of bench/kernel_bench.c in Fortran:
! gfortran's offload code for the same kernels, under each plugin.
!
! usage: kernel_bench_f [-n EXP] [-r REPS] [--allow-host]
!   -n EXP   arrays of 2^EXP doubles (default 25)
!   -r REPS  timed repetitions per kernel after 2 warm-up runs (default 20)
!   --allow-host  go on when target regions run on the host (checks only)
! Each kernel as `!$omp target teams distribute parallel do` and as `... do simd`
! (metric suffix _simd), arrays mapped once (`target enter data`), median host time:
!   metric kernel_f_triad[_simd] VALUE GB/s   c = a + q*b, 24 bytes per element
!   metric kernel_f_dot[_simd] VALUE GB/s     sum a*b, 16 bytes per element
!   metric kernel_f_on_gpu 1|0 bool           whether target regions ran on the device
! "# kernel NAME" before each kernel, "# f_NAME: median M us, mean A us, min T us, R reps"
! after it (the mean counts every timed launch alike). Results are checked (exact by construction);
! a wrong one prints "ERROR ..." and the program stops with exit status 1, as it does
! when regions run on the host without --allow-host.
module kb
  use omp_lib
  implicit none
  integer, parameter :: dp = kind(1.0d0), i8 = selected_int_kind(18)
  integer, parameter :: warmup = 2
  real(dp), parameter :: q = 3.0_dp
contains

  subroutine f_triad(a, b, c, n)
    integer(i8), intent(in) :: n
    real(dp), intent(in) :: a(n), b(n)
    real(dp), intent(inout) :: c(n)
    integer(i8) :: i
    !$omp target teams distribute parallel do map(alloc: a, b, c)
    do i = 1, n
      c(i) = a(i) + q * b(i)
    end do
  end subroutine

  subroutine f_triad_simd(a, b, c, n)
    integer(i8), intent(in) :: n
    real(dp), intent(in) :: a(n), b(n)
    real(dp), intent(inout) :: c(n)
    integer(i8) :: i
    !$omp target teams distribute parallel do simd map(alloc: a, b, c)
    do i = 1, n
      c(i) = a(i) + q * b(i)
    end do
  end subroutine

  subroutine f_fill(c, n)
    integer(i8), intent(in) :: n
    real(dp), intent(inout) :: c(n)
    integer(i8) :: i
    !$omp target teams distribute parallel do simd map(alloc: c)
    do i = 1, n
      c(i) = -1.0_dp
    end do
  end subroutine

  subroutine f_dot(a, b, n, s)
    integer(i8), intent(in) :: n
    real(dp), intent(in) :: a(n), b(n)
    real(dp), intent(out) :: s
    integer(i8) :: i
    s = 0
    !$omp target teams distribute parallel do reduction(+: s) map(tofrom: s) map(alloc: a, b)
    do i = 1, n
      s = s + a(i) * b(i)
    end do
  end subroutine

  subroutine f_dot_simd(a, b, n, s)
    integer(i8), intent(in) :: n
    real(dp), intent(in) :: a(n), b(n)
    real(dp), intent(out) :: s
    integer(i8) :: i
    s = 0
    !$omp target teams distribute parallel do simd reduction(+: s) map(tofrom: s) &
    !$omp&  map(alloc: a, b)
    do i = 1, n
      s = s + a(i) * b(i)
    end do
  end subroutine

  logical function on_gpu()
    logical :: d
    d = .false.
    !$omp target map(from: d)
    d = .not. omp_is_initial_device()
    !$omp end target
    on_gpu = d
  end function

  real(dp) function median(t, n)
    integer, intent(in) :: n
    real(dp), intent(inout) :: t(n)
    integer :: i, j
    real(dp) :: x
    do i = 2, n
      x = t(i)
      j = i - 1
      do while (j >= 1)
        if (t(j) <= x) exit
        t(j + 1) = t(j)
        j = j - 1
      end do
      t(j + 1) = x
    end do
    if (mod(n, 2) == 1) then
      median = t(n / 2 + 1)
    else
      median = 0.5_dp * (t(n / 2) + t(n / 2 + 1))
    end if
  end function

  subroutine metric(name, value, unit)
    character(*), intent(in) :: name, unit
    real(dp), intent(in) :: value
    character(32) :: v
    write (v, '(f20.2)') value
    write (*, '(a)') 'metric kernel_f_' // name // ' ' // trim(adjustl(v)) // ' ' // unit
  end subroutine

  ! After median(t, n): t is sorted, t(1) the fastest run.
  subroutine note(name, med, t, n)
    character(*), intent(in) :: name
    integer, intent(in) :: n
    real(dp), intent(in) :: med, t(n)
    character(32) :: v1, v2, v3, v4
    write (v1, '(f20.1)') med * 1e6_dp
    write (v2, '(f20.1)') t(1) * 1e6_dp
    write (v3, '(i0)') n
    write (v4, '(f20.1)') sum(t) / n * 1e6_dp
    write (*, '(a)') '# f_' // name // ': median ' // trim(adjustl(v1)) // ' us, mean ' // &
      trim(adjustl(v4)) // ' us, min ' // trim(adjustl(v2)) // ' us, ' // trim(v3) // ' reps'
  end subroutine
end module kb

program kernel_bench_f
  use kb
  implicit none
  integer :: e = 25, reps = 20, i, v, nargs, ios, bad = 0
  logical :: allow_host = .false., gpu
  integer(i8) :: n, k
  real(dp), allocatable :: a(:), b(:), c(:), t(:)
  real(dp) :: s, want, t0, med
  character(256) :: arg, val

  nargs = command_argument_count()
  i = 1
  do while (i <= nargs)
    call get_command_argument(i, arg)
    select case (trim(arg))
    case ('-h', '--help')
      write (*, '(a)') 'usage: kernel_bench_f [-n EXP] [-r REPS] [--allow-host]'
      write (*, '(a)') '  -n EXP   arrays of 2^EXP doubles (default 25)'
      write (*, '(a)') '  -r REPS  timed repetitions per kernel after 2 warm-up runs (default 20)'
      write (*, '(a)') '  --allow-host  go on when target regions run on the host (checks only)'
      write (*, '(a)') 'Prints "metric kernel_f_NAME VALUE GB/s" lines (triad, dot, each also _simd);'
      write (*, '(a)') 'ERROR and exit 1 on a wrong result.'
      stop
    case ('--allow-host')
      allow_host = .true.
    case ('-n', '-r')
      if (i == nargs) then
        write (0, '(a)') 'kernel_bench_f: option ' // trim(arg) // ' needs a value'
        stop 2
      end if
      i = i + 1
      call get_command_argument(i, val)
      if (trim(arg) == '-n') then
        read (val, *, iostat=ios) e
      else
        read (val, *, iostat=ios) reps
      end if
      if (ios /= 0) then
        write (0, '(a)') 'kernel_bench_f: bad value ' // trim(val) // ' for ' // trim(arg)
        stop 2
      end if
    case default
      write (0, '(a)') 'kernel_bench_f: unknown argument ''' // trim(arg) // &
        ''' (see --help)'
      stop 2
    end select
    i = i + 1
  end do
  if (e < 4 .or. e > 32 .or. reps < 1) then
    write (0, '(a)') 'kernel_bench_f: bad size or repetitions (see --help)'
    stop 2
  end if

  gpu = on_gpu()
  if (gpu) then
    write (*, '(a)') 'metric kernel_f_on_gpu 1 bool'
  else
    write (*, '(a)') 'metric kernel_f_on_gpu 0 bool'
    if (.not. allow_host) then
      write (*, '(a)') 'ERROR not running on a GPU (target regions fell back to the host)'
      stop 1
    end if
    write (*, '(a)') '# host fallback: the numbers below are host numbers, not GPU results'
  end if

  n = ishft(1_i8, e)
  allocate (a(n), b(n), c(n), t(reps))
  want = 0
  do k = 1, n
    a(k) = real(mod(k - 1, 1024_i8), dp) * 0.25_dp
    b(k) = real(mod(k - 1, 1000_i8), dp) * 0.5_dp
    c(k) = 0
    want = want + a(k) * b(k)   ! multiples of 1/8 below 2^50: exact in any order
  end do
  !$omp target enter data map(to: a, b, c)

  do v = 0, 1
    if (v == 0) then
      write (*, '(a)') '# kernel f_triad'
    else
      write (*, '(a)') '# kernel f_triad_simd'
    end if
    call f_fill(c, n)
    do i = 1, warmup + reps
      t0 = omp_get_wtime()
      if (v == 0) then
        call f_triad(a, b, c, n)
      else
        call f_triad_simd(a, b, c, n)
      end if
      if (i > warmup) t(i - warmup) = omp_get_wtime() - t0
    end do
    med = median(t, reps)
    !$omp target update from(c)
    do k = 1, n
      if (c(k) /= a(k) + q * b(k)) then
        write (*, '(a,i0,a,i0,a,g0,a,g0)') 'ERROR f_triad (simd ', v, '): c(', k, ') = ', &
          c(k), ', want ', a(k) + q * b(k)
        bad = bad + 1
        exit
      end if
    end do
    if (k > n) then
      if (v == 0) then
        call note('triad', med, t, reps)
        call metric('triad', 24.0_dp * real(n, dp) / med / 1e9_dp, 'GB/s')
      else
        call note('triad_simd', med, t, reps)
        call metric('triad_simd', 24.0_dp * real(n, dp) / med / 1e9_dp, 'GB/s')
      end if
    end if
  end do

  do v = 0, 1
    if (v == 0) then
      write (*, '(a)') '# kernel f_dot'
    else
      write (*, '(a)') '# kernel f_dot_simd'
    end if
    do i = 1, warmup + reps
      s = -1
      t0 = omp_get_wtime()
      if (v == 0) then
        call f_dot(a, b, n, s)
      else
        call f_dot_simd(a, b, n, s)
      end if
      if (i > warmup) t(i - warmup) = omp_get_wtime() - t0
    end do
    med = median(t, reps)
    if (s /= want) then
      write (*, '(a,i0,a,g0,a,g0)') 'ERROR f_dot (simd ', v, '): sum ', s, ', want ', want
      bad = bad + 1
    else if (v == 0) then
      call note('dot', med, t, reps)
      call metric('dot', 16.0_dp * real(n, dp) / med / 1e9_dp, 'GB/s')
    else
      call note('dot_simd', med, t, reps)
      call metric('dot_simd', 16.0_dp * real(n, dp) / med / 1e9_dp, 'GB/s')
    end if
  end do

  !$omp target exit data map(delete: a, b, c)
  if (bad > 0) then
    write (*, '(a,i0,a)') 'ERROR ', bad, ' kernel result(s) wrong'
    stop 1
  end if
end program
