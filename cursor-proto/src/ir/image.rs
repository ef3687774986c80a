//! Images carried in user messages and tool results.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An image as raw bytes plus its declared MIME type.
///
/// In JSON the bytes are standard base64 (`data`), matching how hosts store images.
#[non_exhaustive]
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Image {
    /// The MIME type as the host declared it (for example `image/png`).
    pub mime_type: String,
    /// The encoded image bytes (PNG, JPEG, ...), not base64.
    #[serde(serialize_with = "to_base64", deserialize_with = "from_base64")]
    pub data: Vec<u8>,
}

impl Image {
    /// Builds an image from its MIME type and raw bytes.
    pub fn new(mime_type: impl Into<String>, data: impl Into<Vec<u8>>) -> Self {
        Self {
            mime_type: mime_type.into(),
            data: data.into(),
        }
    }

    /// The format the backend accepts for this MIME type, if any.
    pub fn format(&self) -> Option<ImageFormat> {
        ImageFormat::from_mime(&self.mime_type)
    }

    /// The image as a `data:` URL, the form replayed history uses.
    pub fn to_data_url(&self) -> String {
        use base64::Engine as _;
        format!(
            "data:{};base64,{}",
            self.mime_type,
            base64::engine::general_purpose::STANDARD.encode(&self.data)
        )
    }
}

impl std::fmt::Debug for Image {
    // Image payloads are large and may be private: show the size, not the bytes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Image")
            .field("mime_type", &self.mime_type)
            .field("len", &self.data.len())
            .finish()
    }
}

/// The image formats the Cursor backend accepts inline.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ImageFormat {
    /// `image/png`
    Png,
    /// `image/jpeg` (also `image/jpg`)
    Jpeg,
    /// `image/gif`
    Gif,
    /// `image/webp`
    Webp,
    /// `image/bmp`
    Bmp,
}

impl ImageFormat {
    /// Maps a MIME type (case-insensitive, parameters ignored) to a supported format.
    pub fn from_mime(mime: &str) -> Option<Self> {
        let essence = mime
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        match essence.as_str() {
            "image/png" => Some(Self::Png),
            "image/jpeg" | "image/jpg" => Some(Self::Jpeg),
            "image/gif" => Some(Self::Gif),
            "image/webp" => Some(Self::Webp),
            "image/bmp" | "image/x-ms-bmp" => Some(Self::Bmp),
            _ => None,
        }
    }

    /// The canonical MIME type.
    pub const fn mime(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Gif => "image/gif",
            Self::Webp => "image/webp",
            Self::Bmp => "image/bmp",
        }
    }
}

fn to_base64<S: Serializer>(data: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
    use base64::Engine as _;
    serializer.serialize_str(&base64::engine::general_purpose::STANDARD.encode(data))
}

fn from_base64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
    use base64::Engine as _;
    let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
    base64::engine::general_purpose::STANDARD
        .decode(text.as_bytes())
        .map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_json_carries_base64_data() {
        let image = Image::new("image/png", vec![0x89, b'P', b'N', b'G']);
        let json = serde_json::to_value(&image).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"mimeType": "image/png", "data": "iVBORw=="})
        );
        assert_eq!(serde_json::from_value::<Image>(json).unwrap(), image);
    }

    #[test]
    fn invalid_base64_is_a_deserialize_error() {
        let bad = serde_json::json!({"mimeType": "image/png", "data": "***"});
        assert!(serde_json::from_value::<Image>(bad).is_err());
    }

    #[test]
    fn mime_mapping_accepts_only_supported_formats() {
        assert_eq!(ImageFormat::from_mime("IMAGE/JPG"), Some(ImageFormat::Jpeg));
        assert_eq!(
            ImageFormat::from_mime("image/webp; q=1"),
            Some(ImageFormat::Webp)
        );
        assert_eq!(ImageFormat::from_mime("image/svg+xml"), None);
        assert_eq!(ImageFormat::from_mime("image/tiff"), None);
    }

    #[test]
    fn data_url_and_debug_do_not_leak_raw_bytes_unencoded() {
        let image = Image::new("image/gif", b"GIF89a".to_vec());
        assert_eq!(image.to_data_url(), "data:image/gif;base64,R0lGODlh");
        assert_eq!(
            format!("{image:?}"),
            r#"Image { mime_type: "image/gif", len: 6 }"#
        );
    }
}
