//! The WASI preview1 functions, under both module names Envoy registers them with. As in
//! Envoy there is no file system, network or argv: stdout and stderr are the module's log (at
//! info and error), the environment is the VM's configured one, the clocks are the host's, and
//! random bytes come from the VM's deterministic generator.

use super::guest::{guard, len_u32, put_u32, put_u64, read, u, write, C, R};
use crate::abi::{errno, len_i32, LogLevel};
use crate::error::LogSource;
use crate::vm_state::VmState;
use wasmtime::Linker;

fn wasi_log(c: &mut C, fd: i32, iovs: i32, iovs_len: i32) -> Result<usize, i32> {
    let (level, source) = match fd {
        1 => (LogLevel::Info, LogSource::Stdout),
        2 => (LogLevel::Error, LogSource::Stderr),
        _ => return Err(errno::BADF),
    };
    let mut text = Vec::new();
    for i in 0..u(iovs_len) {
        let at = u(iovs).saturating_add(i.saturating_mul(8));
        let Some(iov) = read(c, len_i32(at), 8) else {
            return Err(errno::FAULT);
        };
        let word = |k: usize| -> i32 {
            let b: [u8; 4] = iov
                .get(k..k + 4)
                .and_then(|s| s.try_into().ok())
                .unwrap_or([0; 4]);
            i32::from_le_bytes(b)
        };
        let (buf, len) = (word(0), word(4));
        if len != 0 {
            let Some(bytes) = read(c, buf, len) else {
                return Err(errno::FAULT);
            };
            text.extend_from_slice(&bytes);
        }
    }
    let written = text.len();
    if written != 0 {
        if text.last() == Some(&b'\n') {
            text.pop();
        }
        c.data_mut()
            .log(level, String::from_utf8_lossy(&text).into_owned(), source);
    }
    Ok(written)
}

fn host_note(c: &mut C, message: &str) {
    c.data_mut().log(
        LogLevel::Error,
        format!("host: {message}"),
        LogSource::ProxyLog,
    );
}

pub(super) fn define(l: &mut Linker<VmState>, m: &str) -> wasmtime::Result<()> {
    l.func_wrap(
        m,
        "fd_write",
        |mut c: C, fd: i32, iovs: i32, iovs_len: i32, nwritten: i32| -> R {
            guard(&c, "fd_write")?;
            match wasi_log(&mut c, fd, iovs, iovs_len) {
                Ok(n) => Ok(if put_u32(&mut c, nwritten, len_u32(n)) {
                    errno::SUCCESS
                } else {
                    errno::FAULT
                }),
                Err(e) => Ok(e),
            }
        },
    )?;
    l.func_wrap(
        m,
        "fd_pwrite",
        |mut c: C, fd: i32, iovs: i32, iovs_len: i32, _offset: i64, nwritten: i32| -> R {
            guard(&c, "fd_pwrite")?;
            match wasi_log(&mut c, fd, iovs, iovs_len) {
                Ok(n) => Ok(if put_u32(&mut c, nwritten, len_u32(n)) {
                    errno::SUCCESS
                } else {
                    errno::FAULT
                }),
                Err(e) => Ok(e),
            }
        },
    )?;
    l.func_wrap(m, "fd_read", |c: C, _: i32, _: i32, _: i32, _: i32| -> R {
        guard(&c, "fd_read")?;
        Ok(errno::NOSYS)
    })?;
    l.func_wrap(
        m,
        "fd_seek",
        |mut c: C, _fd: i32, _offset: i64, _whence: i32, _new: i32| -> R {
            guard(&c, "fd_seek")?;
            host_note(&mut c, "wasi_unstable fd_seek");
            Ok(errno::SUCCESS)
        },
    )?;
    l.func_wrap(m, "fd_close", |mut c: C, _fd: i32| -> R {
        guard(&c, "fd_close")?;
        host_note(&mut c, "wasi_unstable fd_close");
        Ok(errno::SUCCESS)
    })?;
    l.func_wrap(m, "fd_fdstat_get", |mut c: C, fd: i32, out: i32| -> R {
        guard(&c, "fd_fdstat_get")?;
        if fd != 1 && fd != 2 {
            return Ok(errno::BADF);
        }
        let mut stat = [0u8; 24];
        if let Some(rights) = stat.get_mut(8..16) {
            rights.copy_from_slice(&64u64.to_le_bytes());
        }
        write(&mut c, out, &stat);
        Ok(errno::SUCCESS)
    })?;
    l.func_wrap(
        m,
        "fd_fdstat_set_flags",
        |c: C, _fd: i32, _flags: i32| -> R {
            guard(&c, "fd_fdstat_set_flags")?;
            Ok(errno::NOSYS)
        },
    )?;
    let stdio = |fd: i32| {
        if fd == 1 || fd == 2 {
            errno::SUCCESS
        } else {
            errno::BADF
        }
    };
    l.func_wrap(
        m,
        "fd_fdstat_set_rights",
        move |c: C, fd: i32, _base: i64, _inheriting: i64| -> R {
            guard(&c, "fd_fdstat_set_rights")?;
            Ok(stdio(fd))
        },
    )?;
    l.func_wrap(
        m,
        "environ_sizes_get",
        |mut c: C, count: i32, size: i32| -> R {
            guard(&c, "environ_sizes_get")?;
            let (n, bytes) = {
                let env = &c.data().opts.environment;
                let bytes: usize = env.iter().map(|(k, v)| k.len() + v.len() + 2).sum();
                (env.len(), bytes)
            };
            Ok(
                if put_u32(&mut c, count, len_u32(n)) && put_u32(&mut c, size, len_u32(bytes)) {
                    errno::SUCCESS
                } else {
                    errno::FAULT
                },
            )
        },
    )?;
    l.func_wrap(m, "environ_get", |mut c: C, array: i32, buf: i32| -> R {
        guard(&c, "environ_get")?;
        let env = c.data().opts.environment.clone();
        let (mut array, mut buf) = (u(array), u(buf));
        for (k, v) in env {
            let entry = format!("{k}={v}\0");
            let (a, b) = (len_i32(array), len_i32(buf));
            if !put_u32(&mut c, a, len_u32(buf)) || !write(&mut c, b, entry.as_bytes()) {
                return Ok(errno::FAULT);
            }
            buf += entry.len();
            array += 4;
        }
        Ok(errno::SUCCESS)
    })?;
    l.func_wrap(m, "args_get", |c: C, _argv: i32, _buf: i32| -> R {
        guard(&c, "args_get")?;
        Ok(errno::SUCCESS)
    })?;
    l.func_wrap(m, "args_sizes_get", |mut c: C, argc: i32, size: i32| -> R {
        guard(&c, "args_sizes_get")?;
        Ok(if put_u32(&mut c, argc, 0) && put_u32(&mut c, size, 0) {
            errno::SUCCESS
        } else {
            errno::FAULT
        })
    })?;
    l.func_wrap(
        m,
        "clock_time_get",
        |mut c: C, id: i32, _precision: i64, out: i32| -> R {
            guard(&c, "clock_time_get")?;
            let Some(now) = u32::try_from(id)
                .ok()
                .and_then(|id| c.data().host.read_clock(id))
            else {
                return Ok(errno::NOTSUP);
            };
            Ok(if put_u64(&mut c, out, now) {
                errno::SUCCESS
            } else {
                errno::FAULT
            })
        },
    )?;
    l.func_wrap(m, "clock_res_get", |mut c: C, id: i32, out: i32| -> R {
        guard(&c, "clock_res_get")?;
        if id != 0 && id != 1 {
            return Ok(errno::NOTSUP);
        }
        Ok(if put_u64(&mut c, out, 1) {
            errno::SUCCESS
        } else {
            errno::FAULT
        })
    })?;
    l.func_wrap(
        m,
        "fd_advise",
        |c: C, _fd: i32, _offset: i64, _len: i64, _advice: i32| -> R {
            guard(&c, "fd_advise")?;
            Ok(errno::SUCCESS)
        },
    )?;
    l.func_wrap(
        m,
        "fd_allocate",
        move |c: C, fd: i32, _offset: i64, _len: i64| -> R {
            guard(&c, "fd_allocate")?;
            Ok(stdio(fd))
        },
    )?;
    l.func_wrap(m, "fd_datasync", move |c: C, fd: i32| -> R {
        guard(&c, "fd_datasync")?;
        Ok(stdio(fd))
    })?;
    l.func_wrap(m, "fd_sync", move |c: C, fd: i32| -> R {
        guard(&c, "fd_sync")?;
        Ok(stdio(fd))
    })?;
    l.func_wrap(
        m,
        "fd_filestat_set_size",
        move |c: C, fd: i32, _size: i64| -> R {
            guard(&c, "fd_filestat_set_size")?;
            Ok(stdio(fd))
        },
    )?;
    l.func_wrap(
        m,
        "fd_filestat_set_times",
        move |c: C, fd: i32, _atim: i64, _mtim: i64, _flags: i32| -> R {
            guard(&c, "fd_filestat_set_times")?;
            Ok(stdio(fd))
        },
    )?;
    l.func_wrap(
        m,
        "fd_pread",
        |c: C, _fd: i32, _iovs: i32, _len: i32, _offset: i64, _nread: i32| -> R {
            guard(&c, "fd_pread")?;
            Ok(errno::NOSYS)
        },
    )?;
    l.func_wrap(
        m,
        "fd_readdir",
        |mut c: C, _fd: i32, _buf: i32, _len: i32, _cookie: i64, nread: i32| -> R {
            guard(&c, "fd_readdir")?;
            if !put_u32(&mut c, nread, 0) {
                return Ok(errno::FAULT);
            }
            Ok(errno::NOTDIR)
        },
    )?;
    l.func_wrap(m, "fd_renumber", |c: C, fd: i32, to: i32| -> R {
        guard(&c, "fd_renumber")?;
        if (fd != 1 && fd != 2) || (to != 1 && to != 2) {
            return Ok(errno::BADF);
        }
        Ok(errno::NOTSUP)
    })?;
    l.func_wrap(m, "fd_tell", |mut c: C, fd: i32, out: i32| -> R {
        guard(&c, "fd_tell")?;
        if fd != 1 && fd != 2 {
            return Ok(errno::BADF);
        }
        Ok(if put_u64(&mut c, out, 0) {
            errno::SUCCESS
        } else {
            errno::FAULT
        })
    })?;
    l.func_wrap(m, "fd_prestat_get", |c: C, _fd: i32, _buf: i32| -> R {
        guard(&c, "fd_prestat_get")?;
        Ok(errno::BADF)
    })?;
    l.func_wrap(
        m,
        "fd_prestat_dir_name",
        |c: C, _fd: i32, _path: i32, _len: i32| -> R {
            guard(&c, "fd_prestat_dir_name")?;
            Ok(errno::NOSYS)
        },
    )?;
    l.func_wrap(m, "fd_filestat_get", |c: C, _fd: i32, _buf: i32| -> R {
        guard(&c, "fd_filestat_get")?;
        Ok(errno::BADF)
    })?;
    l.func_wrap(
        m,
        "path_open",
        |c: C,
         _fd: i32,
         _dirflags: i32,
         _path: i32,
         _path_len: i32,
         _oflags: i32,
         _base: i64,
         _inheriting: i64,
         _fdflags: i32,
         _out: i32|
         -> R {
            guard(&c, "path_open")?;
            Ok(errno::NOENT)
        },
    )?;
    l.func_wrap(
        m,
        "path_filestat_get",
        |c: C, _fd: i32, _flags: i32, _path: i32, _len: i32, _buf: i32| -> R {
            guard(&c, "path_filestat_get")?;
            Ok(errno::NOTSUP)
        },
    )?;
    l.func_wrap(
        m,
        "path_create_directory",
        |c: C, _fd: i32, _path: i32, _len: i32| -> R {
            guard(&c, "path_create_directory")?;
            Ok(errno::NOTSUP)
        },
    )?;
    l.func_wrap(
        m,
        "path_filestat_set_times",
        |c: C, _fd: i32, _flags: i32, _path: i32, _len: i32, _a: i64, _m: i64, _f: i32| -> R {
            guard(&c, "path_filestat_set_times")?;
            Ok(errno::NOTSUP)
        },
    )?;
    // Six parameters, as proxy-wasm-cpp-host declares it (WASI's has seven).
    l.func_wrap(
        m,
        "path_link",
        |c: C, _a: i32, _b: i32, _d: i32, _e: i32, _f: i32, _g: i32| -> R {
            guard(&c, "path_link")?;
            Ok(errno::NOTSUP)
        },
    )?;
    l.func_wrap(
        m,
        "path_readlink",
        |mut c: C, _fd: i32, _path: i32, _len: i32, _buf: i32, _buf_len: i32, out: i32| -> R {
            guard(&c, "path_readlink")?;
            if !put_u32(&mut c, out, 0) {
                return Ok(errno::FAULT);
            }
            Ok(errno::NOTSUP)
        },
    )?;
    l.func_wrap(
        m,
        "path_remove_directory",
        |c: C, _fd: i32, _path: i32, _len: i32| -> R {
            guard(&c, "path_remove_directory")?;
            Ok(errno::NOTSUP)
        },
    )?;
    l.func_wrap(
        m,
        "path_rename",
        |c: C, _a: i32, _b: i32, _d: i32, _e: i32, _f: i32, _g: i32| -> R {
            guard(&c, "path_rename")?;
            Ok(errno::NOTSUP)
        },
    )?;
    // Four parameters, as proxy-wasm-cpp-host declares it (WASI's has five).
    l.func_wrap(
        m,
        "path_symlink",
        |c: C, _a: i32, _b: i32, _d: i32, _e: i32| -> R {
            guard(&c, "path_symlink")?;
            Ok(errno::NOTSUP)
        },
    )?;
    l.func_wrap(
        m,
        "path_unlink_file",
        |c: C, _fd: i32, _path: i32, _len: i32| -> R {
            guard(&c, "path_unlink_file")?;
            Ok(errno::NOTSUP)
        },
    )?;
    l.func_wrap(
        m,
        "sock_accept",
        |mut c: C, _fd: i32, _flags: i32, out: i32| -> R {
            guard(&c, "sock_accept")?;
            if !put_u64(&mut c, out, 0) {
                return Ok(errno::FAULT);
            }
            Ok(errno::NOTSUP)
        },
    )?;
    l.func_wrap(
        m,
        "sock_recv",
        |mut c: C, _fd: i32, _data: i32, _len: i32, _flags: i32, out0: i32, out1: i32| -> R {
            guard(&c, "sock_recv")?;
            if !put_u32(&mut c, out0, 0) || !write(&mut c, out1, &[0, 0]) {
                return Ok(errno::FAULT);
            }
            Ok(errno::NOTSUP)
        },
    )?;
    l.func_wrap(
        m,
        "sock_send",
        |mut c: C, _fd: i32, _data: i32, _len: i32, _flags: i32, out: i32| -> R {
            guard(&c, "sock_send")?;
            if !put_u32(&mut c, out, 0) {
                return Ok(errno::FAULT);
            }
            Ok(errno::NOTSUP)
        },
    )?;
    l.func_wrap(m, "sock_shutdown", |c: C, _fd: i32, _how: i32| -> R {
        guard(&c, "sock_shutdown")?;
        Ok(errno::NOTSUP)
    })?;
    l.func_wrap(m, "random_get", |mut c: C, buf: i32, len: i32| -> R {
        guard(&c, "random_get")?;
        let len = u(len);
        if len > 64 * 1024 {
            return Ok(errno::INVAL);
        }
        let mut bytes = Vec::with_capacity(len + 8);
        while bytes.len() < len {
            let r = c.data_mut().next_random();
            bytes.extend_from_slice(&r.to_le_bytes());
        }
        bytes.truncate(len);
        Ok(if write(&mut c, buf, &bytes) {
            errno::SUCCESS
        } else {
            errno::FAULT
        })
    })?;
    l.func_wrap(m, "sched_yield", |c: C| -> R {
        guard(&c, "sched_yield")?;
        Ok(errno::SUCCESS)
    })?;
    l.func_wrap(
        m,
        "poll_oneoff",
        |mut c: C, _in: i32, _out: i32, _n: i32, nevents: i32| -> R {
            guard(&c, "poll_oneoff")?;
            Ok(if put_u32(&mut c, nevents, 0) {
                errno::SUCCESS
            } else {
                errno::FAULT
            })
        },
    )?;
    // Envoy only logs it and returns; the module traps right after (wasi-libc's `_Exit`).
    l.func_wrap(
        m,
        "proc_exit",
        |mut c: C, code: i32| -> wasmtime::Result<()> {
            guard(&c, "proc_exit")?;
            host_note(&mut c, &format!("wasi_unstable proc_exit({code})"));
            Ok(())
        },
    )?;
    Ok(())
}
