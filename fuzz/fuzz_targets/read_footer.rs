//! Fuzzes the parser of a host's trailing truncation note on a read (`[N more lines in file.
//! Use offset=M to continue.]`): no panic or overflow, the content kept is the text's head, and
//! a stated total is never negative.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| cursor_agent::fuzzing::read_footer(data));
