// A header of the server layer.
#pragma once
