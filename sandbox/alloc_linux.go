package sandbox

import "syscall"

const mapFlags = syscall.MAP_PRIVATE | syscall.MAP_ANON | syscall.MAP_NORESERVE
