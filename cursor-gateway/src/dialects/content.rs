//! Content as every dialect reads it: runs of text blocks folded into one text as they are
//! parsed, images decoded from base64, JSON values kept as their text until they are paid for.

use base64::Engine as _;
use cursor_agent::ir::Image;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::engine::admission::value_cost;

/// A run of text blocks, joined with a newline between blocks (as Cursor joins a user message's
/// text blocks), remembering where each join is so an assistant's text can be joined without
/// them (as a client's split answer reads back).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Joined {
    text: String,
    /// Byte offsets of the newlines inserted between blocks.
    joins: Vec<usize>,
    blocks: usize,
}

impl Joined {
    /// One block of `text`.
    pub(crate) fn one(text: String) -> Self {
        Self {
            text,
            joins: Vec::new(),
            blocks: 1,
        }
    }

    /// Appends one more block.
    pub(crate) fn push(&mut self, text: &str) {
        if self.blocks > 0 {
            self.joins.push(self.text.len());
            self.text.push('\n');
        }
        self.text.push_str(text);
        self.blocks += 1;
    }

    /// The blocks joined with newlines.
    pub(crate) fn newline_joined(self) -> String {
        self.text
    }

    /// The blocks joined with nothing between them.
    pub(crate) fn concatenated(self) -> String {
        if self.joins.is_empty() {
            return self.text;
        }
        let mut out = String::with_capacity(self.text.len() - self.joins.len());
        let mut from = 0;
        for at in self.joins {
            out.push_str(&self.text[from..at]);
            from = at + 1;
        }
        out.push_str(&self.text[from..]);
        out
    }
}

/// Appends a text block to `parts`, folding it into a text run that ends them.
pub(crate) fn push_text<P>(
    parts: &mut Vec<P>,
    text: &str,
    as_run: impl FnOnce(&mut P) -> Option<&mut Joined>,
    new_run: impl FnOnce(Joined) -> P,
) {
    if let Some(run) = parts.last_mut().and_then(as_run) {
        run.push(text);
    } else {
        parts.push(new_run(Joined::one(text.to_owned())));
    }
}

/// A kind of content block that a message's content folds into as it is read: a string is one
/// text block, a list is read one raw element at a time, each folded into the list so far.
pub(crate) trait Fold: Sized {
    /// An element as it arrives (borrowing from the body where it can).
    type Raw<'de>: serde::Deserialize<'de>;

    /// A string's content: one text block.
    fn text(text: String) -> Self;

    /// Folds element `index` into `parts` (a text run grows, anything else is pushed).
    fn fold(index: usize, raw: Self::Raw<'_>, parts: &mut Vec<Self>);
}

/// Reads a message's content (a string, or a list of blocks) as `P`s, one block at a time.
pub(crate) fn deserialize_folded<'de, D, P>(input: D) -> Result<Vec<P>, D::Error>
where
    D: serde::Deserializer<'de>,
    P: Fold,
{
    struct Blocks<P>(std::marker::PhantomData<P>);

    impl<'de, P: Fold> serde::de::Visitor<'de> for Blocks<P> {
        type Value = Vec<P>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a string or a list of content blocks")
        }

        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Vec<P>, E> {
            Ok(vec![P::text(text.to_owned())])
        }

        fn visit_string<E: serde::de::Error>(self, text: String) -> Result<Vec<P>, E> {
            Ok(vec![P::text(text)])
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<P>, A::Error> {
            let mut parts = Vec::new();
            let mut index = 0;
            while let Some(raw) = seq.next_element::<P::Raw<'de>>()? {
                P::fold(index, raw, &mut parts);
                index += 1;
            }
            Ok(parts)
        }
    }

    input.deserialize_any(Blocks(std::marker::PhantomData))
}

/// An image from its media type and base64 data; only image types.
pub(crate) fn image_from_base64(media_type: &str, data: &str) -> Result<Image, String> {
    if !media_type.starts_with("image/") {
        return Err(format!("{media_type} is not an image type"));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("the image is not base64: {e}"))?;
    Ok(Image::new(media_type, bytes))
}

/// A `data:` URL's image; remote URLs are refused (the gateway fetches nothing).
pub(crate) fn image_from_data_url(url: &str) -> Result<Image, String> {
    let rest = url.strip_prefix("data:").ok_or(
        "only data: URLs are accepted (data:image/png;base64,...); the gateway fetches nothing",
    )?;
    let (meta, data) = rest.split_once(',').ok_or("a data URL needs a comma")?;
    let mime = meta
        .strip_suffix(";base64")
        .ok_or("the data URL must be base64")?;
    image_from_base64(mime, data)
}

/// JSON kept as its text until the request pays for the tree it becomes.
#[derive(Clone, Debug)]
pub(crate) struct Deferred(pub(crate) Box<RawValue>);

impl Deferred {
    /// The heap the tree will take.
    pub(crate) fn cost(&self) -> usize {
        value_cost(self.0.get())
    }

    /// The tree (its text was valid JSON when it was read).
    pub(crate) fn build(&self) -> Value {
        serde_json::from_str(self.0.get()).unwrap_or(Value::Null)
    }
}

impl<'de> serde::Deserialize<'de> for Deferred {
    fn deserialize<D: serde::Deserializer<'de>>(input: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(input).map(Self)
    }
}

/// Whether a request field that cannot be honoured was sent (anything but `null`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Sent(pub(crate) bool);

impl<'de> serde::Deserialize<'de> for Sent {
    fn deserialize<D: serde::Deserializer<'de>>(input: D) -> Result<Self, D::Error> {
        // Read and thrown away without building anything.
        let value = Option::<serde::de::IgnoredAny>::deserialize(input)?;
        Ok(Self(value.is_some()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_of_blocks_joins_with_newlines_for_users_and_without_for_answers() {
        let mut run = Joined::one("a".into());
        run.push("");
        run.push("b\nc");
        assert_eq!(run.clone().newline_joined(), "a\n\nb\nc");
        assert_eq!(run.concatenated(), "ab\nc");
        assert_eq!(Joined::one("x".into()).concatenated(), "x");
    }

    #[test]
    fn images_come_only_from_base64_image_data() {
        let image = image_from_data_url("data:image/png;base64,iVBORw0KGgo=").unwrap();
        assert_eq!(image.mime_type, "image/png");
        assert_eq!(image.data[..4], [0x89, b'P', b'N', b'G']);
        assert!(
            image_from_data_url("https://127.0.0.1/y.png")
                .unwrap_err()
                .contains("data: URLs")
        );
        assert!(image_from_base64("text/plain", "aGk=").is_err());
        assert!(image_from_base64("image/png", "***").is_err());
    }
}
