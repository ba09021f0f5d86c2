! acc_row_average.f90 - an OpenACC loop nest whose result must not depend on the launch
! shape the runtime picks (issue 54). One `parallel` with no num_gangs/num_workers/
! vector_length, a loop over the rows, and per row a DO WHILE whose body is two inner
! loops: scale the row by 1.5, then a `reduction(+:avg)` of the row's average. Each row
! is scaled until its average reaches 1010, so every row's final average lies in
! [1010, 1515]; it is checked against [1000, 1600] and against the same computation on
! the host (within 1e-6: the reduction's order may differ).
!
! Two forms of the same nest, run on the same data:
! - `private`: the rows loop says `private(avg)`. Each row has its own `avg`, so the
!   result is the same for every gang, worker and vector count. Checked: a wrong row
!   fails the test.
! - `shared`: as a user first wrote it, without `private(avg)`. `avg` is then the
!   region's one firstprivate copy (gang-private in OpenACC's terms, in GCC 16's code one
!   variable in device memory for every gang), and GCC 16 partitions the rows loop over
!   gangs and workers: the workers of a gang race on it (the reduction starts from the
!   value in memory, which another row may just have written). Its wrong rows depend on
!   the timing of the warps, with any plugin (docs/autotune.md, "A loop nest that races
!   on a shared scalar"); printed as INFO, not checked.
! The region runs REPS times on fresh data (argument 1, default 8): the launch-shape
! tuner tries its candidates on repeated launches, so each of them runs it.
! Prints "ok rep N" per repetition of the checked form, "INFO shared form: ..." and
! "OK ..."; "FAIL ..." with the row and exit 1 on a wrong row of the checked form.
program acc_row_average
  implicit none
  integer, parameter :: nr = 10, nc = 1000
  real(8) :: a(nr, nc), s(nr, nc), h(nr, nc), avg
  integer :: x, rep, reps, bad, racy
  character(len=16) :: arg

  reps = 8
  if (command_argument_count () >= 1) then
    call get_command_argument (1, arg)
    read (arg, *) reps
  end if
  bad = 0
  racy = 0
  do rep = 1, reps
    call random_number (a)
    s = a
    h = a
    call sweep_private (a)
    call sweep_shared (s)
    call sweep_host (h)
    do x = 1, nr
      if (wrong (a, x)) then
        avg = sum (a(x, :)) / nc
        print '(a,i0,a,i0,a,f0.4,a,f0.4)', 'FAIL rep ', rep, ' row ', x, ': average ', &
          avg, ', host ', sum (h(x, :)) / nc
        bad = bad + 1
      end if
      if (wrong (s, x)) racy = racy + 1
    end do
    if (bad == 0) print '(a,i0,a)', 'ok rep ', rep, ': every row as on the host'
  end do
  print '(a,i0,a,i0,a)', 'INFO shared form (no private(avg), a data race): ', racy, &
    ' wrong row(s) of ', reps * nr
  if (bad /= 0) then
    print '(i0,a)', bad, ' wrong row(s)'
    stop 1
  end if
  print '(a,i0,a)', 'OK ', reps, ' repetitions'

contains

  logical function wrong (b, x)
    real(8), intent(in) :: b(nr, nc)
    integer, intent(in) :: x
    real(8) :: got, want
    got = sum (b(x, :)) / nc
    want = sum (h(x, :)) / nc
    wrong = got < 1000 .or. got > 1600 .or. abs (got - want) > 1e-6 * want
  end function wrong

  subroutine sweep_private (b)
    real(8), intent(inout) :: b(nr, nc)
    real(8) :: t
    integer :: i, j
    !$acc data copy(b)
    !$acc parallel
    !$acc loop private(t)
    do i = 1, nr
      t = 0
      do while (t - 1000 < 1e-2 * 1000)
        t = 0
        !$acc loop
        do j = 1, nc
          b(i, j) = b(i, j) * 1.5
        end do
        !$acc loop reduction(+:t)
        do j = 1, nc
          t = t + b(i, j) / nc
        end do
      end do
    end do
    !$acc end parallel
    !$acc end data
  end subroutine sweep_private

  subroutine sweep_shared (b)
    real(8), intent(inout) :: b(nr, nc)
    real(8) :: t
    integer :: i, j
    !$acc data copy(b)
    !$acc parallel
    !$acc loop
    do i = 1, nr
      t = 0
      do while (t - 1000 < 1e-2 * 1000)
        t = 0
        !$acc loop
        do j = 1, nc
          b(i, j) = b(i, j) * 1.5
        end do
        !$acc loop reduction(+:t)
        do j = 1, nc
          t = t + b(i, j) / nc
        end do
      end do
    end do
    !$acc end parallel
    !$acc end data
  end subroutine sweep_shared

  subroutine sweep_host (b)
    real(8), intent(inout) :: b(nr, nc)
    real(8) :: t
    integer :: i, j
    do i = 1, nr
      t = 0
      do while (t - 1000 < 1e-2 * 1000)
        t = 0
        do j = 1, nc
          b(i, j) = b(i, j) * 1.5
        end do
        do j = 1, nc
          t = t + b(i, j) / nc
        end do
      end do
    end do
  end subroutine sweep_host
end program acc_row_average
