#ifndef ZS_CRC32C_H
#define ZS_CRC32C_H
#include <stddef.h>
#include <stdint.h>

void zs_crc32c_init(void);
uint32_t zs_crc32c(const uint8_t *p, size_t n);
/* Always the table path, so tests can check it against the hardware path on the same machine. */
uint32_t zs_crc32c_portable(const uint8_t *p, size_t n);
int zs_crc32c_hardware(void);
#endif
