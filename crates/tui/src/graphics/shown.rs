//! A picture encoded for one area with one protocol (ratatui-image's
//! encoders): laid over the theme's background, grown by a whole number
//! (each pixel a k × k square, never blurred, as large as the area and
//! `MAX_PIXELS` allow: a 240 × 120 chart is not left a few cells wide where
//! half-blocks would fill the pane) or else fitted into the area at the
//! terminal's cell size, and centred. It is made
//! before a frame (`PictureView::prepare`), once per picture and area, and
//! drawn in the frame (`render`): the escape goes into the first cell and
//! the others are skipped (sixel, iTerm2) or hold kitty's placeholders.

use image::{DynamicImage, RgbaImage};
use ratatui::Frame;
use ratatui::layout::{Rect, Size};
use ratatui_image::protocol::Protocol as Encoded;
use ratatui_image::protocol::iterm2::Iterm2;
use ratatui_image::protocol::kitty::Kitty;
use ratatui_image::protocol::sixel::Sixel;
use ratatui_image::{FilterType, FontSize, Image, Resize};

use super::{Graphics, Protocol};
use crate::picture::Pixels;

/// The kitty image id the workbench draws with: one picture at a time, so
/// a new one replaces the last in the terminal's memory.
pub(crate) const KITTY_ID: u32 = 0x00C0_DE01;

/// The smallest area a protocol is used for; below it, half-blocks.
pub(crate) const MIN_COLS: u16 = 8;
pub(crate) const MIN_ROWS: u16 = 4;

/// The most pixels a picture is grown to (kitty's payload is raw RGBA:
/// 4 MiB, 5.3 MiB in base64, sent once per picture and size).
pub(crate) const MAX_PIXELS: u32 = 1 << 20;
/// Sixel's encoder is the slowest: half that.
pub(crate) const MAX_PIXELS_SIXEL: u32 = 1 << 19;

/// How many times a `width` × `height` picture is grown in `body` at cells
/// of `cell` pixels: the largest whole k that fits the body and `cap`
/// pixels, at least 1 (a picture larger than the body is then fitted).
pub(crate) fn growth(width: u32, height: u32, body: Rect, cell: (u16, u16), cap: u32) -> u32 {
    if width == 0 || height == 0 {
        return 1;
    }
    let avail_w = u32::from(body.width) * u32::from(cell.0);
    let avail_h = u32::from(body.height) * u32::from(cell.1);
    let mut k = (avail_w / width).min(avail_h / height).max(1);
    while k > 1 && u64::from(width * k) * u64::from(height * k) > u64::from(cap) {
        k -= 1;
    }
    k
}

/// Each pixel of `img` as a `k` × `k` square.
pub(crate) fn grow(img: &RgbaImage, k: u32) -> RgbaImage {
    if k <= 1 {
        return img.clone();
    }
    RgbaImage::from_fn(img.width() * k, img.height() * k, |x, y| {
        *img.get_pixel(x / k, y / k)
    })
}

/// A picture encoded for an area.
pub struct Shown {
    /// The area it was made for (the pane's body).
    pub(crate) body: Rect,
    /// Where in `body` it is drawn.
    pub at: Rect,
    pub protocol: Protocol,
    encoded: Encoded,
}

impl std::fmt::Debug for Shown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shown")
            .field("body", &self.body)
            .field("at", &self.at)
            .field("protocol", &self.protocol)
            .finish()
    }
}

/// The picture's pixels laid over `background` (every protocol draws it
/// opaque, as half-blocks do).
pub(crate) fn opaque(px: &Pixels, background: [u8; 3]) -> RgbaImage {
    let mut img = RgbaImage::new(px.width, px.height);
    for (i, p) in img.pixels_mut().enumerate() {
        let s = px.rgba.get(i).copied().unwrap_or([0, 0, 0, 0]);
        let a = u32::from(s[3]);
        let mix = |c: u8, b: u8| ((u32::from(c) * a + u32::from(b) * (255 - a)) / 255) as u8;
        *p = image::Rgba([
            mix(s[0], background[0]),
            mix(s[1], background[1]),
            mix(s[2], background[2]),
            255,
        ]);
    }
    img
}

/// Encode `px` for `body` with `graphics`. None where this protocol is
/// not to be used here (half-blocks chosen, no cell size, an area too
/// small), or the encoder failed: the caller draws half-blocks.
pub(crate) fn encode(
    px: &Pixels,
    body: Rect,
    graphics: &Graphics,
    background: [u8; 3],
) -> Option<Shown> {
    let (cw, ch) = graphics.cell_size()?;
    if body.width < MIN_COLS || body.height < MIN_ROWS || cw == 0 || ch == 0 {
        return None;
    }
    let font = FontSize::new(cw, ch);
    let cap = match graphics.protocol {
        Protocol::Sixel => MAX_PIXELS_SIXEL,
        _ => MAX_PIXELS,
    };
    let k = growth(px.width, px.height, body, (cw, ch), cap);
    let source = DynamicImage::ImageRgba8(grow(&opaque(px, background), k));
    let resize = Resize::Fit(Some(FilterType::Triangle));
    let size = resize.size_for(&source, font, Size::new(body.width, body.height));
    if size.width == 0 || size.height == 0 || size.width > body.width || size.height > body.height {
        return None;
    }
    let [r, g, b] = background;
    let fitted = resize.resize(&source, font, size, Some(image::Rgba([r, g, b, 255])));
    let encoded = match graphics.protocol {
        Protocol::Halfblocks => return None,
        Protocol::Kitty => {
            Encoded::Kitty(Kitty::new(fitted, size, KITTY_ID, graphics.tmux, false).ok()?)
        }
        Protocol::Sixel => Encoded::Sixel(Sixel::new(fitted, size, graphics.tmux).ok()?),
        Protocol::Iterm2 => Encoded::ITerm2(Iterm2::new(fitted, size, graphics.tmux).ok()?),
    };
    let at = Rect {
        x: body.x + (body.width - size.width) / 2,
        y: body.y + (body.height - size.height) / 2,
        width: size.width,
        height: size.height,
    };
    Some(Shown {
        body,
        at,
        protocol: graphics.protocol,
        encoded,
    })
}

impl Shown {
    /// Draw it (only into the area it was made for).
    pub(crate) fn render(&self, frame: &mut Frame) {
        frame.render_widget(Image::new(&self.encoded), self.at);
    }
}
