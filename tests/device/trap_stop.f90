! trap_stop.f90 - `error stop` inside a target region (a kernel that traps
! through Fortran's stop). Expected (trap_stop.expect): the device's "ERROR STOP 7" text,
! then libgomp's fatal path with exit status 1; no hang, no crash of the plugin.
program trap_stop
  implicit none
  integer :: n, r
  n = command_argument_count () + 3
  r = 0
  !$omp target map(to: n) map(from: r)
  if (n == 3) error stop 7
  r = n
  !$omp end target
  print '(a,i0)', 'FAIL the region returned: r=', r
end program trap_stop
