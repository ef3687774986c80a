//! A process environment made of fixed pairs, for the tests of the `from_lookup` readers.

/// Looks names up in `pairs` (the first match wins), as `std::env::var` or `var_os` would.
pub(crate) fn lookup<'a, T: From<&'a str>>(
    pairs: &'a [(&'a str, &'a str)],
) -> impl Fn(&str) -> Option<T> + 'a {
    move |name| {
        pairs
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| T::from(value))
    }
}
