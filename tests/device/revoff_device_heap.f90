! revoff_device_heap.f90 - reverse offload maps allocatables that the kernel
! allocated itself (device-side malloc) to the host and back: the driver's copy
! functions refuse such memory, the plugin copies it with a kernel (the
! upstream libgomp.fortran/reverse-offload-5.f90 is XFAIL for nvptx because of it).
! Prints "OK" or stops with a non-zero code.
program revoff_device_heap
  implicit none
  !$omp requires reverse_offload
  integer :: r
  r = 0
  !$omp target map(tofrom: r)
  block
    integer, allocatable :: ai(:), si
    ai = [23, 35, 86, 43]
    si = 64
    !$omp target device(ancestor:1) map(tofrom: ai, si)
      if (any (ai /= [23, 35, 86, 43])) stop 1
      if (si /= 64) stop 2
      ai = ai * 13
      si = si * 27
    !$omp end target
    if (any (ai /= 13 * [23, 35, 86, 43])) then
      r = 3
    else if (si /= 27 * 64) then
      r = 4
    else
      r = 42
    end if
  end block
  if (r /= 42) then
    print *, "FAIL", r
    stop 5
  end if
  print *, "OK device-heap allocatables mapped by reverse offload"
end program
