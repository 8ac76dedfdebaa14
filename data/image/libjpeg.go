//go:build goaccel_libjpeg && cgo

package image

// This file, built with -tags goaccel_libjpeg (and cgo), decodes JPEG files with the system's
// libjpeg-turbo (Debian's libjpeg62-turbo-dev), the library Pillow bundles: the same ISLOW
// inverse DCT, fancy upsampling and colour conversion, so the pixels equal Pillow's byte for
// byte, 3-5 times faster than image/jpeg (docs/images.md). CMYK and YCCK files still go
// through image/jpeg. Without the tag nothing here is built and the package needs no C.

/*
#cgo LDFLAGS: -ljpeg
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <jpeglib.h>
#include <jerror.h>

struct gerr {
	struct jpeg_error_mgr pub;
	jmp_buf jb;
	int truncated;
	char msg[JMSG_LENGTH_MAX];
};

static void gerr_exit(j_common_ptr c) {
	struct gerr *e = (struct gerr *)c->err;
	(*c->err->format_message)(c, e->msg);
	longjmp(e->jb, 1);
}

// A warning does not stop libjpeg; data ending early (it then pads with gray) is an error
// here, as it is for Pillow ("image file is truncated"). Other warnings are ignored, as
// Pillow ignores them.
static void gerr_emit(j_common_ptr c, int level) {
	struct gerr *e = (struct gerr *)c->err;
	if (level < 0 && c->err->msg_code == JWRN_JPEG_EOF) {
		e->truncated = 1;
	}
}

// gdecode decodes the JPEG file buf[0:n] into out (w*h*3 bytes, RGB). It returns 0, or 1
// with msg set (an error), 2 when the file is CMYK or YCCK (for the caller to decode), 3
// when the data end early.
static int gdecode(const unsigned char *buf, unsigned long n, unsigned char *out, int w, int h, char *msg) {
	struct jpeg_decompress_struct d;
	struct gerr e;
	memset(&e, 0, sizeof e);
	d.err = jpeg_std_error(&e.pub);
	e.pub.error_exit = gerr_exit;
	e.pub.emit_message = gerr_emit;
	if (setjmp(e.jb)) {
		jpeg_destroy_decompress(&d);
		strncpy(msg, e.msg, JMSG_LENGTH_MAX - 1);
		return 1;
	}
	jpeg_create_decompress(&d);
	jpeg_mem_src(&d, buf, n);
	jpeg_read_header(&d, TRUE);
	if (d.jpeg_color_space == JCS_CMYK || d.jpeg_color_space == JCS_YCCK) {
		jpeg_destroy_decompress(&d);
		return 2;
	}
	d.out_color_space = JCS_RGB;
	jpeg_start_decompress(&d);
	if ((int)d.output_width != w || (int)d.output_height != h || d.output_components != 3) {
		snprintf(msg, JMSG_LENGTH_MAX, "libjpeg gives %ux%u x %d, the header %dx%d x 3",
			d.output_width, d.output_height, d.output_components, w, h);
		jpeg_destroy_decompress(&d);
		return 1;
	}
	while (d.output_scanline < d.output_height) {
		JSAMPROW row = out + (size_t)d.output_scanline * w * 3;
		jpeg_read_scanlines(&d, &row, 1);
	}
	jpeg_finish_decompress(&d);
	jpeg_destroy_decompress(&d);
	return e.truncated ? 3 : 0;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"io"
	"unsafe"
)

func init() { libjpeg = decodeLibjpeg }

// decodeLibjpeg decodes the JPEG file data of w x h pixels (from its header); ok is false
// for a CMYK or YCCK file, left to image/jpeg.
func decodeLibjpeg(data []byte, w, h int) (m *RGB, ok bool, err error) {
	if len(data) == 0 {
		return nil, true, io.ErrUnexpectedEOF
	}
	m = &RGB{Width: w, Height: h, Pix: make([]uint8, w*h*3)}
	var msg [C.JMSG_LENGTH_MAX]C.char
	switch C.gdecode((*C.uchar)(unsafe.Pointer(&data[0])), C.ulong(len(data)), (*C.uchar)(unsafe.Pointer(&m.Pix[0])),
		C.int(w), C.int(h), &msg[0]) {
	case 0:
		return m, true, nil
	case 2:
		return nil, false, nil
	case 3:
		return nil, true, fmt.Errorf("libjpeg: %w", io.ErrUnexpectedEOF)
	}
	return nil, true, errors.New("libjpeg: " + C.GoString(&msg[0]))
}
